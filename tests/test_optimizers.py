"""activebayes._optimizers against torch.optim: the same parameters after N steps (float
tolerance), for Adam and SGD, with weight decay, parameter groups, a learning rate changed
between steps and a parameter that has no gradient on some steps."""

import sys

import pytest
import torch
from torch import nn

from activebayes._optimizers import SGD, Adam


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"))]


def two_copies(seed: int = 0, device: str = "cpu") -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2), nn.Linear(2, 2))
    twin = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2), nn.Linear(2, 2))
    twin.load_state_dict(net.state_dict())
    return net.to(device), twin.to(device)


def groups(net: nn.Module) -> list[dict]:
    """Two groups: the first layer without weight decay, the rest under the optimiser's."""
    return [{"params": list(net[0].parameters()), "weight_decay": 0.0}, {"params": [*net[2].parameters(), *net[3].parameters()]}]


def run(net: nn.Module, optimizer, steps: int = 25) -> None:
    generator = torch.Generator().manual_seed(1)
    device = next(net.parameters()).device
    for step in range(steps):
        x, y = torch.randn(16, 3, generator=generator).to(device), torch.randint(0, 2, (16,), generator=generator).to(device)
        for group in optimizer.param_groups:
            group["lr"] = 0.05 / (1 + step)  # a schedule, as `train(lr_at=...)` sets it
        optimizer.zero_grad(set_to_none=True)
        hidden = net[1](net[0](x))
        out = net[2](hidden) if step % 3 == 0 else net[3](net[2](hidden))  # the last layer: no gradient every third step
        nn.functional.cross_entropy(out, y).backward()
        optimizer.step()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_adam_matches_torch_optim_adam(weight_decay, device):
    ours, theirs = two_copies(device=device)
    run(ours, Adam(groups(ours), lr=0.05, weight_decay=weight_decay))
    run(theirs, torch.optim.Adam(groups(theirs), lr=0.05, weight_decay=weight_decay))
    for a, b in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("momentum", "weight_decay"), [(0.0, 0.0), (0.9, 0.0), (0.9, 0.01)])
def test_sgd_matches_torch_optim_sgd(momentum, weight_decay, device):
    ours, theirs = two_copies(device=device)
    run(ours, SGD(groups(ours), lr=0.05, momentum=momentum, weight_decay=weight_decay))
    run(theirs, torch.optim.SGD(groups(theirs), lr=0.05, momentum=momentum, weight_decay=weight_decay))
    for a, b in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_adam_on_a_plain_parameter_list_matches_torch():
    ours, theirs = two_copies(seed=3)
    run(ours, Adam(list(ours.parameters()), lr=0.01))
    run(theirs, torch.optim.Adam(list(theirs.parameters()), lr=0.01))
    for a, b in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_zero_grad_in_place_keeps_zeroed_tensors():
    net, _ = two_copies()
    optimizer = SGD(net.parameters(), lr=0.1)
    net(torch.randn(4, 3)).sum().backward()
    optimizer.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in net.parameters())
    optimizer.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_training_a_network_leaves_torch_dynamo_unimported():
    import subprocess

    code = ("import sys, torch; from torch import nn; from activebayes.training import TrainConfig, train\n"
            "x, y = torch.randn(32, 3), torch.randint(0, 2, (32,))\n"
            "for opt in ('adam', 'sgd'):\n"
            "    train(nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)), x, y, TrainConfig(epochs=2, optimizer=opt), seed=0, device='cpu')\n"
            "print('torch._dynamo' in sys.modules)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
