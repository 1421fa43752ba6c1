"""Definitions the chapter states in several notebooks, in one place and in the same words.

b10-checkpoint, e06-checkpointing and p6-resume-bit-for-bit each print CHECKPOINT verbatim
(as markdown). b10's and e06's graders count bytes by the constants below; p6's counts the
bytes of its own small model's saved state by the same rule (fp32 weights and Adam's two
moments, with the step counts and the RNG state). tests/problems/test_checkpoint_definition.py
holds the three to it.
"""

CHECKPOINT = (
    "**What a checkpoint holds (the chapter's definition).** A training checkpoint holds "
    "everything the next step reads and cannot recompute: the fp32 weights (in mixed "
    "precision, the fp32 master copy), the optimiser's state, the learning-rate scheduler's "
    "state, the random number generators' states and the position in the data, and, with fp16, "
    "the GradScaler's state. For Adam that is 4 + 4 + 4 = 12 bytes per parameter. The 16-bit "
    "copy of the weights is not part of it: it is a cast of the fp32 master weights, and the "
    "same cast on loading gives the same bits. It is saved only when the checkpoint must also "
    "serve as a model that loads without its optimiser (for evaluation, export or serving); "
    "DeepSpeed and Megatron-LM, for instance, write the 16-bit module weights beside the fp32 "
    "optimiser state, and then the checkpoint is 2 + 12 = 14 bytes per parameter."
)

ADAM_CHECKPOINT_BYTES_PER_PARAM = 4 + 4 + 4            # fp32 weights, exp_avg, exp_avg_sq
WITH_16BIT_COPY_BYTES_PER_PARAM = 2 + ADAM_CHECKPOINT_BYTES_PER_PARAM
