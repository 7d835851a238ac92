#!/usr/bin/env python3
"""Makes the models bundled with nnfuse, with fixed random weights, exported with Debian's
python3-torch, each with one input and PyTorch's output for it:
  tiny_resnet: a small ResNet-style classifier (Conv-BN-ReLU stem, two residual blocks, global
               pooling, a linear head);
  tiny_mlp:    tests/models/export_models.py's ActMLP at width 256 (Mish, a per-feature Swish and
               a written-out softmax between Linear layers): what automatic fusion is for.

Usage: /usr/bin/python3 models/make_bundled.py [tiny_resnet] [tiny_mlp]
       (default both; writes models/<name>*.{onnx,npy})
"""
import os
import sys
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
HERE = os.path.dirname(os.path.abspath(__file__))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


class TinyResNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layer1, self.layer2 = Block(16, 16, 1), Block(16, 32, 2)
        self.pool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(32, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def tiny_resnet():
    m = TinyResNet()
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            with torch.no_grad():
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 2.0)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.2, 0.2)
    m.eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        y = m(x)
    torch.onnx.export(m, (x,), os.path.join(HERE, "tiny_resnet.onnx"), input_names=["input"],
                      output_names=["logits"], opset_version=13,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=True)
    np.save(os.path.join(HERE, "tiny_resnet_input.npy"), x.numpy())
    np.save(os.path.join(HERE, "tiny_resnet_logits.npy"), y.numpy())


def tiny_mlp():
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "models"))
    from export_models import ActMLP
    torch.manual_seed(1)
    m = ActMLP(d=256, layers=4).eval()
    x = torch.randn(64, 256)
    with torch.no_grad():
        y = m(x)
    torch.onnx.export(m, (x,), os.path.join(HERE, "tiny_mlp.onnx"), input_names=["x"],
                      output_names=["probs"], opset_version=13, do_constant_folding=True)
    np.save(os.path.join(HERE, "tiny_mlp_input.npy"), x.numpy())
    np.save(os.path.join(HERE, "tiny_mlp_probs.npy"), y.numpy())


if __name__ == "__main__":
    for name in sys.argv[1:] or ["tiny_resnet", "tiny_mlp"]:
        {"tiny_resnet": tiny_resnet, "tiny_mlp": tiny_mlp}[name]()
