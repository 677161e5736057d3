"""The offline index builder: BDZ perfect hashing over seed neighborhoods, on-disk format."""

SUFFIX = ".marose"  # an index is the folder named for its FASTA and this (store.default_path)
