"""Guest image builder: a gzip'd newc cpio initramfs with the agent as /init, busybox, the
workload tools and their libraries, and optionally a kernel release's modules."""

from orchestrator.image.contents import format_member, list_image
from orchestrator.image.initramfs import GuestImage, GuestImageBuilder, default_cache_root
from orchestrator.image.plan import DEFAULT_MODULES, MODULE_LIST_PATH, ImagePlan
from orchestrator.image.tools import DEFAULT_TOOLS, MANDATORY_TOOLS, ImageTool

__all__ = [
    "DEFAULT_MODULES",
    "DEFAULT_TOOLS",
    "MANDATORY_TOOLS",
    "MODULE_LIST_PATH",
    "GuestImage",
    "GuestImageBuilder",
    "ImagePlan",
    "ImageTool",
    "default_cache_root",
    "format_member",
    "list_image",
]
