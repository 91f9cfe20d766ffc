"""`foundation.cabundle`: the operator's CA reaches every client without taking the public CAs from any."""

from __future__ import annotations

import ssl
from pathlib import Path

import certifi
import httpx
import pytest
import requests

from foundation import cabundle
from tests.fakes.git_http import create_git_server
from tests.fakes.private_ca import private_ca
from tests.fakes.server import free_port, serving


def test_an_unset_variable_gets_the_operators_certificates_with_the_public_ones(tmp_path: Path) -> None:
    ca, _ = private_ca(tmp_path)
    environ = {"REQUESTS_CA_BUNDLE": str(ca), "GIT_SSL_CAINFO": ""}
    bundle = cabundle.share(environ, tmp_path / "tls")
    assert bundle is not None and environ["REQUESTS_CA_BUNDLE"] == str(ca)  # the operator's choice stays
    assert environ["SSL_CERT_FILE"] == environ["CURL_CA_BUNDLE"] == environ["GIT_SSL_CAINFO"] == str(bundle)
    context = ssl.create_default_context(cafile=str(bundle))
    public = ssl.create_default_context(cafile=certifi.where())
    subjects = {str(c["subject"]) for c in context.get_ca_certs()}
    assert {str(c["subject"]) for c in public.get_ca_certs()} < subjects  # a model at a public endpoint still works
    assert any("forgebot test CA" in subject for subject in subjects)


def test_nothing_is_written_when_no_variable_or_every_variable_is_set(tmp_path: Path) -> None:
    assert cabundle.share({}, tmp_path / "none") is None
    ca, _ = private_ca(tmp_path)
    every = dict.fromkeys(cabundle.FILES, str(ca))
    assert cabundle.share(every, tmp_path / "all") is None  # a child of `serve`: its parent wrote the bundle
    assert every == dict.fromkeys(cabundle.FILES, str(ca))
    assert not (tmp_path / "none").exists() and not (tmp_path / "all").exists()


@pytest.mark.parametrize("content", [None, "not a certificate\n"])
def test_a_variable_that_names_no_certificate_stops_with_its_name(tmp_path: Path, content: str | None) -> None:
    named = tmp_path / "ca.pem"
    if content is not None:
        named.write_text(content)
    environ = {"SSL_CERT_FILE": str(named), "REQUESTS_CA_BUNDLE": certifi.where()}
    with pytest.raises(cabundle.BundleError, match=f"^SSL_CERT_FILE={named}: "):
        cabundle.share(environ, tmp_path / "tls")
    assert "GIT_SSL_CAINFO" not in environ


def test_a_refused_certificate_is_told_from_an_outage_by_each_client(tmp_path: Path) -> None:
    """What requests, httpx and git say of a certificate no CA here signed, against what they say of a closed
    port: only the first is `untrusted`."""
    _, tls = private_ca(tmp_path)
    with serving(create_git_server(tmp_path, None), tls) as server:
        with pytest.raises(requests.RequestException) as by_requests:
            requests.get(server.url, verify=certifi.where(), timeout=5)
        with pytest.raises(httpx.HTTPError) as by_httpx:
            httpx.get(server.url, verify=ssl.create_default_context(cafile=certifi.where()), timeout=5)
    assert cabundle.untrusted(by_requests.value) == "unable to get local issuer certificate"
    assert cabundle.untrusted(by_httpx.value) == "unable to get local issuer certificate"
    git_said = ("fatal: unable to access 'https://127.0.0.1:1/app.git/': server certificate verification failed. "
                "CAfile: /etc/ssl/certs/ca-certificates.crt CRLfile: none")
    assert cabundle.untrusted(git_said).startswith("fatal: unable to access")
    closed = f"https://127.0.0.1:{free_port()}"
    with pytest.raises(requests.RequestException) as refused:
        requests.get(closed, timeout=5)
    assert cabundle.untrusted(refused.value) == ""
    assert cabundle.untrusted("fatal: unable to access 'x': Failed to connect to 127.0.0.1 port 1") == ""
