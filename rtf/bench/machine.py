"""What a measurement ran on: CPU, cores, memory, Python, OS and load.

Every figure rtf reports (``rtf bench``, the Spark replay's metrics.json)
carries this record, so that numbers from different machines are never
compared by mistake.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine_info() -> dict:
    """The machine record of every measurement.

    The CPU model is read from /proc/cpuinfo by hand (reviewed for issue 26):
    psutil, already a dependency, gives cores, memory and load but no model
    name; py-cpuinfo would, but it has had no release since 2022 and runs a
    subprocess (about a second) where one file read does.
    """
    import psutil

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    return {"cpu": cpu, "cores": os.cpu_count(), "cores_usable": affinity,
            "cores_physical": psutil.cpu_count(logical=False),
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "os": platform.platform(),
            # other work on the machine skews the timings: the load when the bench ended
            "load_avg_1_5_15": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None}
