"""Build of the one C accelerator (`zyx_dist/fuse/_structure.c`, the plan cache's graph walks); everything else is
in pyproject.toml. The extension is optional: where it cannot be built (no C compiler), the install goes on and
zyx_dist runs the same walks in Python (fuse/plan_cache.py), only slower."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("zyx_dist.fuse._structure", ["zyx_dist/fuse/_structure.c"], optional=True)])
