"""The blocks of the encoding page (docs/benchmarks/encoding.md) and README's encoding line: each backend against
sentence-transformers' matching path."""

from __future__ import annotations

from collections.abc import Callable

from . import shared

# hf_xlsr's backends and the sentence-transformers path of the same precision and engine. Its backend="openvino" needs
# optimum-intel 2, which needs transformers < 5.6 (hf_xlsr: >= 5.20), so bench_encoding.py runs it in an environment of
# its own; its backend="onnx" needs optimum-onnx, whose release 0.1.0 requires transformers < 4.58, which
# sentence-transformers 6 does not run on: its float32 stands in for ONNX, and its OpenVINO int8 for int8.
MATCHING_PEER = {
    "torch": ("sentence-transformers", "`SentenceTransformer.encode`, float32"),
    "bf16": ("sentence-transformers bf16", '`model_kwargs={"dtype": torch.bfloat16}`'),
    "onnx": ("sentence-transformers", 'float32 (its `backend="onnx"` does not install beside it)'),
    "onnx-int8": (
        "sentence-transformers openvino int8",
        "its static int8 on OpenVINO (its ONNX int8 does not install beside it)",
    ),
    "openvino": ("sentence-transformers openvino", '`backend="openvino"`, in an environment of its own'),
    "openvino-int8": (
        "sentence-transformers openvino int8",
        "`export_static_quantized_openvino_model`, in an environment of its own",
    ),
}


LEAD = 1.3  # the speed ratio below which a backend is called the peer's engine at the peer's speed


TIE = 0.25  # points of held-out retrieval read as no difference: 19 of the 7,500 queries of the 30 directions


PEER = "sentence-transformers"  # the float32 path, and the prefix of every peer arm's name


def fastest_peer(rows: dict, lost: float) -> str:
    """The fastest sentence-transformers path that loses no more held-out retrieval against its float32 path than an
    arm that loses ``lost`` points (less than none counts as none; `TIE` points more count as no more): the peer at
    its best for that arm."""
    base = rows[PEER]["retrieval_accuracy"]
    eligible = [
        name
        for name, row in rows.items()
        if name.startswith(PEER) and 100 * (base - row["retrieval_accuracy"]) <= max(lost, 0) + TIE
    ]
    return max(eligible, key=lambda name: rows[name]["sentences_per_second"])


def encoding_table(data: dict | None = None) -> str:
    """Each hf_xlsr backend against the sentence-transformers path of the same precision and engine where one installs,
    and against sentence-transformers' fastest path that loses no more retrieval (`fastest_peer`); a lead is claimed
    only at :data:`LEAD` times that fastest path's speed."""
    data = data or shared.load("encoding_against_peers.json")
    rows = data["rows"]
    base = rows[PEER]["retrieval_accuracy"]
    lines = [
        "| hf_xlsr `--backend` | sentence-transformers' matching path | × its speed | points lost against it | "
        "its fastest path at no more loss | × its speed | reading |",
        "| --- | --- | ---: | ---: | --- | ---: | --- |",
    ]
    for backend, (peer, label) in MATCHING_PEER.items():
        if backend not in rows or peer not in rows:
            continue
        speed, accuracy = rows[backend]["sentences_per_second"], rows[backend]["retrieval_accuracy"]
        ratio = speed / rows[peer]["sentences_per_second"]
        lost = 100 * (rows[peer]["retrieval_accuracy"] - accuracy)
        best = fastest_peer(rows, 100 * (base - accuracy))
        versus_best = speed / rows[best]["sentences_per_second"]
        if versus_best >= LEAD:
            reading = "ahead"
        elif abs(versus_best - 1) < 0.1:
            reading = "the same speed"
        else:
            reading = "behind" if versus_best < 1 else "no lead"
        lines.append(f"| `{backend}` | {label} | {ratio:.2f} | {lost:+.2f} | {best} | {versus_best:.2f} | {reading} |")
    model = data["arguments"]["model"]
    return "\n".join(lines) + f"\n\n`{model}`, {data['sentences']} held-out sentences, {data['machine']}.\n"


def encoding_summary() -> str:
    """One line: hf_xlsr's fastest backend against sentence-transformers' fastest path that loses no more."""
    data = shared.load("encoding_against_peers.json")
    rows, base = data["rows"], data["rows"][PEER]["retrieval_accuracy"]
    ours = max((b for b in MATCHING_PEER if b in rows), key=lambda b: rows[b]["sentences_per_second"])
    best = fastest_peer(rows, 100 * (base - rows[ours]["retrieval_accuracy"]))
    ratio = rows[ours]["sentences_per_second"] / rows[best]["sentences_per_second"]
    difference = 100 * (rows[ours]["retrieval_accuracy"] - rows[best]["retrieval_accuracy"])
    return (
        f"hf_xlsr's fastest backend, `{ours}`, encodes at {ratio:.2f}× the speed of sentence-transformers' "
        f"fastest path that loses no more held-out retrieval ({best}), {difference:+.2f} points of retrieval "
        "against it "
        f"(`{data['arguments']['model']}`, {data['sentences']} sentences, {data['machine']}).\n"
    )


def encoding_full_table() -> str:
    """Every arm of the encoding benchmark: its speed against sentence-transformers' float32 and against the
    sentence-transformers path matching it, its held-out retrieval and what it loses."""
    data = shared.load("encoding_against_peers.json")
    rows = data["rows"]
    base = rows[PEER]
    lines = [
        "| encoder | sentences / s | × ST float32 | × matching ST path | retrieval | lost (points) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in rows.items():
        matching = MATCHING_PEER.get(name.split(",")[0], (name, ""))[0]
        speed = row["sentences_per_second"]
        versus = speed / rows[matching]["sentences_per_second"] if matching in rows else None
        lines.append(
            f"| {name} | {speed:.1f} | {speed / base['sentences_per_second']:.2f}"
            f" | {'—' if versus is None else f'{versus:.2f}'} | {100 * row['retrieval_accuracy']:.2f}% | "
            f"{100 * (base['retrieval_accuracy'] - row['retrieval_accuracy']):+.2f} |"
        )
    return "\n".join(lines) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "encoding": encoding_table,
    "encoding-full": encoding_full_table,
    "encoding-summary": encoding_summary,
}
