"""The blocks of the end-to-end mining page (docs/benchmarks/mining.md)."""

from __future__ import annotations

from collections.abc import Callable

from . import shared


def e2e_table(data: dict) -> str:
    """Each size's peer, hf_xlsr and exact search (the reference): times, memory, recall, F1; then the searches of
    hf_xlsr's saved embeddings again (``--search-again``)."""
    runs = {run["arm"]: run for run in data["runs"]}
    setup = data["setup"]
    peer_dtype = "float32" if setup["backend"] == "torch" else "bfloat16"
    labels = {"peer": f"sentence-transformers example ({peer_dtype})", "hf_xlsr": f"hf_xlsr (`{setup['backend']}`, "
              "`auto`)", "exact": "exact search on the peer's embeddings (reference)"}  # fmt: skip
    lines = [
        "| sentences per side | arm | seconds | × peer | encoding s | search s | × peer | peak MB added | "
        "recall | best F1 | F1 at 1.06 |",
        "| ---: | --- |" + " ---: |" * 9,
    ]
    shared_sizes = []
    for size in sorted({run["size"] for run in runs.values()}):
        peer = runs.get(f"peer {size}")
        shared = bool(peer and peer.get("shared_encoding"))
        if shared:
            shared_sizes.append(f"{size:,}")
        for arm, label in labels.items():
            run = runs.get(f"{arm} {size}")
            if run is None:
                continue
            if shared:
                label = label.replace(f" ({peer_dtype})", "").replace("the peer's embeddings", "the shared encoding")
            timed = "seconds" in run
            cells = (
                [
                    f"{run['seconds']:.0f}",
                    f"{run['seconds'] / peer['seconds']:.2f}",
                    f"{run['encode_seconds']:.0f}",
                    f"{run['search_seconds']:.1f}",
                    f"{run['search_seconds'] / peer['search_seconds']:.2f}",
                    f"{run['peak_added_mb']:.0f}",
                ]
                if timed and peer
                else ["—"] * 6
            )
            if arm == "hf_xlsr":
                label = f"{label}: `{run['index']}`".replace("|", "\\|")
            lines.append(
                f"| {size:,} | {label} | " + " | ".join(cells) + f" | {100 * run['recall']:.1f} | "
                f"{100 * run['best_f1']:.1f} | {100 * run['f1_at_1.06']:.1f} |"
            )
        for run in (run for run in data["runs"] if run["arm"].startswith("search ") and run["size"] == size):
            index = run["index"].replace("|", "\\|")
            searched = f"{run['search_seconds']:.1f} | {run['search_seconds'] / peer['search_seconds']:.2f}"
            lines.append(
                f"| {size:,} | hf_xlsr's embeddings searched again: `{index}` | — | — | — | {searched} | "
                f"— | {100 * run['recall']:.1f} | {100 * run['best_f1']:.1f} | "
                f"{100 * run['f1_at_1.06']:.1f} |"
            )
    head = (
        f"`{setup['model']}`, {setup['threads']} torch and faiss thread per arm; the launching process: "
        f"{setup['machine']}; {setup.get('date', '')}.\n\n"
    )
    if shared_sizes:
        head += (
            f"At {', '.join(shared_sizes)} sentences per side both arms mine one encoding, hf_xlsr's "
            f"`{setup['backend']}` (`--encode-once`), timed once: each side in a process of "
            f"{setup['threads']} thread, the two at once, their seconds summed.\n\n"
        )
    return head + "\n".join(lines) + "\n"


TABLES: dict[str, Callable[[], str]] = {
    "mining-e2e": lambda: e2e_table(shared.load("mining_e2e.json")),
}
