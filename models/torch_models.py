"""Cedar's models written again in PyTorch, for the tools that run PyTorch next to Cedar:
bench/ddp_step.py (step timing against DDP) and tests/differential/ (Cedar and PyTorch's own
distributed implementations trained side by side from the same state).

ResNetCifar is models/resnet_cifar.cpp: 3x3 conv (16) + BN + ReLU, three stages of n basic blocks
(16, 32, 64 channels; stride 2 at the start of stages 2 and 3), option-A shortcuts (stride-2
subsampling, zero-padded channels, no parameters), global average pool, linear classifier;
convolutions without bias, Kaiming-normal (fan-in, ReLU) init. Parameter and buffer names are
Cedar's (torchvision's), so a state Cedar wrote loads by name (load_named_state).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv3x3(in_planes, out_planes, stride):
    return nn.Conv2d(in_planes, out_planes, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.in_planes, self.planes, self.stride = in_planes, planes, stride
        self.conv1 = conv3x3(in_planes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, 1)
        self.bn2 = nn.BatchNorm2d(planes)

    def shortcut(self, x):
        if self.stride == 1 and self.in_planes == self.planes:
            return x
        y = x[:, :, :: self.stride, :: self.stride] if self.stride != 1 else x
        extra = self.planes - self.in_planes
        return F.pad(y, (0, 0, 0, 0, extra // 2, extra - extra // 2)) if extra else y

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNetCifar(nn.Module):
    def __init__(self, depth=20, num_classes=10):
        super().__init__()
        n = (depth - 2) // 6
        self.conv1 = conv3x3(3, 16, 1)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = self._stage(16, 16, n, 1)
        self.layer2 = self._stage(16, 32, n, 2)
        self.layer3 = self._stage(32, 64, n, 2)
        self.fc = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")

    @staticmethod
    def _stage(in_planes, planes, blocks, stride):
        return nn.Sequential(*[BasicBlock(in_planes if i == 0 else planes, planes,
                                          stride if i == 0 else 1) for i in range(blocks)])

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def build(name, num_classes=10):
    """The model Cedar's `model.name` names (the CIFAR ResNets: resnet20, 32, 44, 56, 110)."""
    if name.startswith("resnet") and name[6:].isdigit() and (int(name[6:]) - 2) % 6 == 0:
        return ResNetCifar(int(name[6:]), num_classes)
    raise ValueError(f"no PyTorch version of Cedar's model '{name}' (models/torch_models.py)")


@torch.no_grad()
def load_named_state(model, tensors, prefix):
    """Copies tensors[prefix + name] into every parameter and buffer of `model`; a name missing
    from `tensors`, or of another shape, is an error."""
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        src = tensors[prefix + name]
        if src.shape != t.shape:
            raise ValueError(f"{prefix}{name}: shape {tuple(src.shape)}, model {tuple(t.shape)}")
        t.copy_(src)
