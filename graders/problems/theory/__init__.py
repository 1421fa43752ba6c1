"""The problems of source/theory/: theory of chapter II.8."""
