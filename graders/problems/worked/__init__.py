"""The problems of source/worked/: worked problems of chapter II.8."""
