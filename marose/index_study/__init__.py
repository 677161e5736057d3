"""Which index filters fastest: marose's PHF neighborhoods against a q-mer hash table, a suffix
array and an FM-index, all answering the same q-gram queries (issue 24; scripts/index_study.py).

Each rival structure has a module with its numpy builder, the host side of its OpenCL lookup
(cl/<structure>.cl) and the numpy twin of that kernel; phf.py adapts marose's own index."""
