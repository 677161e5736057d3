"""marose: an all-mapper for short reads on any OpenCL device."""

__version__ = "0.1.0"
