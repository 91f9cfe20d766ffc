{{/* Names and labels, podinfo's shape. */}}
{{- define "forgebot.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "forgebot.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "forgebot.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "forgebot.labels" -}}
helm.sh/chart: {{ include "forgebot.chart" . }}
{{ include "forgebot.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "forgebot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "forgebot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "forgebot.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "forgebot.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "forgebot.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "forgebot.secretName" -}}
{{- default (include "forgebot.fullname" .) .Values.existingSecret }}
{{- end }}

{{/* The worker may finish its task after SIGTERM: give it the job timeout plus a margin. */}}
{{- define "forgebot.workerGrace" -}}
{{- if gt (int .Values.worker.terminationGracePeriodSeconds) 0 }}
{{- int .Values.worker.terminationGracePeriodSeconds }}
{{- else }}
{{- add (int .Values.jobTimeout) 30 }}
{{- end }}
{{- end }}

{{/* Refuse configurations that cannot work, at render time rather than in a crash loop. */}}
{{- define "forgebot.validate" -}}
{{- if not (or .Values.redis.enabled .Values.externalRedis.url .Values.existingSecret) }}
{{- fail "forgebot needs Redis: set redis.enabled=true (evaluation), externalRedis.url, or a redis_url key in existingSecret" }}
{{- end }}
{{- if and .Values.redis.enabled .Values.externalRedis.url }}
{{- fail "set either redis.enabled or externalRedis.url, not both" }}
{{- end }}
{{- $workers := ternary .Values.autoscaling.maxReplicas .Values.worker.replicaCount .Values.autoscaling.enabled }}
{{- if and .Values.persistence.enabled (not .Values.persistence.existingClaim) (has "ReadWriteOnce" .Values.persistence.accessModes) (gt (int $workers) 1) }}
{{- fail "a ReadWriteOnce data volume serves one worker: set worker.replicaCount=1 (and no autoscaling) or use ReadWriteMany" }}
{{- end }}
{{- if and .Values.web.pdb.enabled (ge (int .Values.web.pdb.minAvailable) (int .Values.web.replicaCount)) }}
{{- fail "web.pdb.minAvailable must be below web.replicaCount, or no node could ever be drained" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (not .Values.redis.enabled) (not .Values.autoscaling.redisAddress) }}
{{- fail "autoscaling with an external Redis needs autoscaling.redisAddress (host:port)" }}
{{- end }}
{{- end }}

{{/* Environment shared by web and worker: settings from the ConfigMap, secrets from files. */}}
{{- define "forgebot.env" -}}
- name: FORGEBOT_SECRETS_DIR
  value: /etc/forgebot/secrets
- name: HOME
  value: /tmp/home
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "forgebot.volumeMounts" -}}
- name: data
  mountPath: /var/lib/forgebot
- name: tmp
  mountPath: /tmp
- name: secrets
  mountPath: /etc/forgebot/secrets
  readOnly: true
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "forgebot.commonVolumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
- name: secrets
  secret:
    secretName: {{ include "forgebot.secretName" . }}
    defaultMode: 0440
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}
