"""The offline index builder: BDZ perfect hashing over seed neighborhoods, on-disk format."""
