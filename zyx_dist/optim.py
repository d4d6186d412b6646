"""Driver side: `zd.optim`, the optimizers of API.md section 11 (`SGD`, `Adam`), implemented in
`zyx_dist.frontend.optim`; this module is the public name, so `import zyx_dist.optim` works too."""

from __future__ import annotations

from .frontend.optim import SGD, Adam, Optimizer

__all__ = ["SGD", "Adam", "Optimizer"]
