"""Build an XlsrTrainer for a model with a momentum encoder under a real DeepSpeed ZeRO-3 configuration (one CPU
process) and print the refusal. Run with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import tiny_dual_momentum  # noqa: E402

from hf_xlsr.trainers import XlsrTrainer, XlsrTrainingArguments  # noqa: E402

zero3 = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}
args = XlsrTrainingArguments(output_dir=sys.argv[1], deepspeed=zero3, use_cpu=True, report_to="none")
try:
    XlsrTrainer(model=tiny_dual_momentum(), args=args)
except ValueError as error:
    print(f"refused: {error}")
