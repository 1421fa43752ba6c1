"""b01-dataset: a dataset, counted in the unit a language model consumes.

A text dataset is stored as bytes (UTF-8) in documents. A tokenizer turns the
bytes into tokens at an average rate of `bytes_per_token` that depends on the
tokenizer *and* on the text; so the same bytes are a different number of tokens
for a different tokenizer. Pretraining packs the tokens of all documents into
one stream and cuts it into sequences of exactly T tokens; a tail shorter than T
makes no sequence.

    dataset_tokens       = dataset_bytes / bytes_per_token
    sequences            = floor(dataset_tokens / T)
    mean_document_tokens = dataset_tokens / documents

Sources for the variants (bytes, documents and tokens as printed):
- Soldaini et al. 2024, "Dolma", Table 1: UTF-8 bytes (GB), documents (millions)
  and Llama tokens (billions) per source; Wikipedia + Wikibooks 16.2 GB, 6.2M
  documents, 4.3B Llama tokens.
- Groeneveld et al. 2024, "OLMo", Table 2: the same Dolma sources counted with
  the GPT-NeoX tokenizer; GitHub 1,043 GB, 210M documents, 342B tokens; Reddit
  339 GB, 377M documents, 80B tokens.
- karpathy/nanoGPT data/shakespeare/readme.md: the 1,115,394-character Tiny
  Shakespeare is 301,966 + 36,059 = 338,025 GPT-2 tokens.
The variant's `bytes_per_token` is the printed bytes over the printed tokens,
quoted to three significant figures.
"""
import math

from graders.numeric import Count, Number
from graders.problem import Mistake, Problem


def _positive(q, name, whole=False):
    value = q[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, not {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, not {value!r}")
    if whole:
        if value != int(value):
            raise ValueError(f"{name} must be a whole number, not {value!r}")
        return int(value)
    return float(value)


def _answers(q, *, rate="divide", partial=False, padded=False):
    dataset_bytes = _positive(q, "dataset_bytes")
    bytes_per_token = _positive(q, "bytes_per_token")
    documents = _positive(q, "documents", whole=True)
    T = _positive(q, "T", whole=True)
    if rate == "divide":
        tokens = dataset_bytes / bytes_per_token
    elif rate == "multiply":
        tokens = dataset_bytes * bytes_per_token
    else:                                    # one token per byte
        tokens = dataset_bytes
    mean_document = tokens / documents
    if padded:                               # every document starts its own sequence(s)
        sequences = documents * math.ceil(mean_document / T)
    elif partial:
        sequences = math.ceil(tokens / T)
    else:
        sequences = math.floor(tokens / T)
    return {
        "dataset_tokens": tokens,
        "sequences": sequences,
        "mean_document_tokens": mean_document,
    }


def _only(keys, answers):
    return {k: v for k, v in answers.items() if k in keys}


class DatasetProblem(Problem):
    id = "b01-dataset"
    title = "Dataset: bytes, tokens and packed sequences"
    strand = "basics"
    kind = "basics"
    assignment = "basics"
    symbols = ()
    variants = {
        # Dolma's Wikipedia + Wikibooks with the Llama tokenizer, Llama 2's 4096-token context
        "A": {"dataset_bytes": 16_200_000_000, "documents": 6_200_000, "bytes_per_token": 3.77,
              "T": 4096},
        # Dolma's GitHub code with the GPT-NeoX tokenizer, OLMo's 2048-token context
        "B": {"dataset_bytes": 1_043_000_000_000, "documents": 210_000_000, "bytes_per_token": 3.05,
              "T": 2048},
        # Dolma's Reddit with the GPT-NeoX tokenizer: short documents, many to a sequence
        "C": {"dataset_bytes": 339_000_000_000, "documents": 377_000_000, "bytes_per_token": 4.24,
              "T": 2048},
        # Tiny Shakespeare (one document) with GPT-2's tokenizer and 1024-token context
        "D": {"dataset_bytes": 1_115_394, "documents": 1, "bytes_per_token": 3.30, "T": 1024},
    }
    checks = {
        "dataset_tokens": Number(rtol=1e-3),
        "sequences": Count(),
        "mean_document_tokens": Number(rtol=1e-3),
    }
    cells = {
        "check_numbers": ("dataset_tokens", "sequences", "mean_document_tokens"),
    }

    def solve(self, params):
        return _answers(params)

    mistakes = (
        Mistake(
            "multiplied-by-the-rate",
            "the bytes were multiplied by the bytes-per-token rate; a token stands for several "
            "bytes, so there are fewer tokens than bytes: divide.",
            lambda q: _answers(q, rate="multiply"),
            instant="what the bytes-per-token rate measures.",
        ),
        Mistake(
            "a-byte-is-a-token",
            "each byte was counted as a token (a character-level view); a subword tokenizer "
            "covers several bytes with one token.",
            lambda q: _answers(q, rate="one"),
            instant="what a subword token stands for in bytes.",
        ),
        Mistake(
            "kept-the-partial-sequence",
            "the ragged tail shorter than T was counted as a sequence; packing keeps only full "
            "sequences of exactly T tokens, so round down.",
            lambda q: _only(("sequences",), _answers(q, partial=True)),
            instant="the ragged tail of the packed token stream.",
        ),
        Mistake(
            "one-document-per-sequence",
            "each document was given sequences of its own (padding); packing runs the documents "
            "together in one stream, so short documents share a sequence.",
            # with a single document, padding and keeping the partial sequence coincide
            lambda q: {} if int(q["documents"]) == 1
            else _only(("sequences",), _answers(q, padded=True)),
            instant="how packing runs documents together in one stream.",
        ),
    )


PROBLEM = DatasetProblem()
