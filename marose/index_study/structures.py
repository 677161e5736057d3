"""The structures of the study, by name: each one's module (build, twin) and device class."""

from . import fm_index, phf, qmer_hash, suffix_array

STRUCTURES = {
    "phf": (phf, phf.DevicePhf),
    "qmer_hash": (qmer_hash, qmer_hash.DeviceQmerHash),
    "suffix_array": (suffix_array, suffix_array.DeviceSuffixArray),
    "fm_index": (fm_index, fm_index.DeviceFmIndex),
}
