"""The output folder of a Spark job, through Hadoop's file system (local paths or any Hadoop URI)."""

from __future__ import annotations

import os
from pathlib import Path

from rtf.spark.dumps import ReplayError, has_scheme, local_path


class HadoopFS:
    """The few file operations the driver needs, on local paths or any Hadoop URI."""

    def __init__(self, sc):
        self.sc = sc

    def _fs(self, path: str):
        jvm = self.sc._jvm
        p = jvm.org.apache.hadoop.fs.Path(path)
        return p.getFileSystem(self.sc._jsc.hadoopConfiguration()), p

    def list_dir(self, path: str) -> list[str] | None:
        """File names in directory `path`, or None if it is not a directory."""
        fs, p = self._fs(path)
        if not fs.exists(p):
            raise ReplayError(f"{path}: no such file or directory")
        if not fs.getFileStatus(p).isDirectory():
            return None
        return sorted(s.getPath().getName() for s in fs.listStatus(p) if s.isFile())

    def exists(self, path: str) -> bool:
        if not has_scheme(path):
            return Path(local_path(path)).exists()
        fs, p = self._fs(path)
        return fs.exists(p)

    def delete(self, path: str) -> None:
        if not has_scheme(path):
            import shutil
            shutil.rmtree(local_path(path))
            return
        fs, p = self._fs(path)
        fs.delete(p, True)

    def names(self, path: str) -> list[str]:
        if not has_scheme(path):
            return sorted(os.listdir(local_path(path)))
        fs, p = self._fs(path)
        return sorted(s.getPath().getName() for s in fs.listStatus(p))

    def write_text(self, path: str, text: str) -> None:
        if not has_scheme(path):
            Path(local_path(path)).write_text(text, encoding="utf-8")
            return
        fs, p = self._fs(path)
        out = fs.create(p, True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()


def is_previous_output(names: list[str]) -> bool:
    """A folder that only holds what this job writes (so --overwrite may delete it)."""
    return all(n.startswith(("part-", "_SUCCESS", ".part-", "._SUCCESS"))
               or n in ("metrics.json", "_metrics.json", "._metrics.json.crc")
               for n in names)


def prepare_output(fs: HadoopFS, output: str, overwrite: bool) -> None:
    if not fs.exists(output):
        return
    if not overwrite:
        raise ReplayError(f"{output} exists; choose a new --output folder or pass --overwrite")
    names = fs.names(output) if (has_scheme(output) or Path(local_path(output)).is_dir()) else None
    if names is None or not is_previous_output(names):
        raise ReplayError(f"{output} exists and is not the output of an earlier run "
                          "(it holds other files); refusing to delete it")
    fs.delete(output)


