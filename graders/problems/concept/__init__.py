"""The problems of source/concept/: concept of chapter II.8."""
