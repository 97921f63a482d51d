"""vmbisect: find the kernel commit that moved a performance metric, in libvirt/QEMU guests."""

__version__ = "0.1.0"
