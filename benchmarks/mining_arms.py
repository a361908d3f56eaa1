"""What the mining benchmarks measure, written once for the scripts that measure it (``bench_mining_scale.py``,
``bench_mining_engines.py``) and the report that reads their results (``report/mining_scale.py``)."""

REAL = 409_226  # sentences a side the corpus holds
ARMS = {"peer": "sentence-transformers example", "hf_xlsr": "hf_xlsr `auto`",
        "hf_xlsr_wide": "hf_xlsr `auto`'s index, twice the probes"}  # fmt: skip
ENGINES = ("scanner", "faiss Flat", "faiss SQ8")  # bench_mining_engines' arms
SPEEDUP_GOAL = 1.5  # the scanner stays where it is this much faster than faiss at equal gold recall
