"""Train an hf_xlsr model from a run configuration.

    accelerate launch examples/train.py examples/configs/dual_momentum_bible_en_fr.yaml [--key value ...]

This is the same code as ``hf-xlsr train CONFIG.yaml``; under ``accelerate launch`` every process runs it.
"""

import sys

from hf_xlsr_cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
