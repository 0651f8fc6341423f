"""Language-model metrics that accumulate across steps and processes."""

from __future__ import annotations

import torch
from torchmetrics import Metric


class TokenPerplexity(Metric):
    """exp(token-mean NLL) over every trained token seen since the last reset.

    ``update(nll_sum, n_tokens)`` takes the summed negative log-likelihood of a batch and its token
    count, so the full-vocabulary logits never reach the metric.
    """

    full_state_update = False
    higher_is_better = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("nll_sum", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("tokens", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, nll_sum: torch.Tensor, n_tokens: torch.Tensor) -> None:
        self.nll_sum += nll_sum.detach().to(torch.float64)
        self.tokens += torch.as_tensor(n_tokens, dtype=torch.float64, device=self.tokens.device)

    def compute(self) -> torch.Tensor:
        return torch.exp(self.nll_sum / self.tokens.clamp(min=1.0)).float()
