"""Build of the two C accelerators (`zyx_dist/fuse/_structure.c`, the plan cache's graph walks, and
`zyx_dist/graph/_node.c`, the graph's node); everything else is in pyproject.toml. Both are optional: where they
cannot be built (no C compiler), the install goes on and zyx_dist runs the same code in Python
(fuse/plan_cache.py, graph/ir.py), only slower."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("zyx_dist.fuse._structure", ["zyx_dist/fuse/_structure.c"], optional=True),
                   Extension("zyx_dist.graph._node", ["zyx_dist/graph/_node.c"],
                             depends=["zyx_dist/graph/_node_contract.c"], optional=True)])
