"""ddpm-unet: a denoising-diffusion (DDPM) UNet trained to predict the noise added to 64×64 images; a new model as a
user brings one (plain torch), laid out as DDPM and improved-diffusion lay it out.

Model: a sinusoidal timestep embedding (64 wide) and an MLP to 256 (Linear, SiLU, Linear); a 3×3 convolution to 64
channels, then four levels at 64, 128, 128 and 256 channels (base 64 × (1, 2, 2, 4)) at 64, 32, 16 and 8 pixels a side,
each of two ResBlocks (GroupNorm(32), SiLU, 3×3 convolution, the timestep embedding projected and added, GroupNorm,
SiLU, 3×3 convolution, the residual through a 1×1 convolution where the width changes) and, at 16×16 and 8×8, a
self-attention block after each (GroupNorm, a 1×1 convolution to q, k and v, `scaled_dot_product_attention` over the
pixels in heads of 64 channels, a 1×1 projection, the residual); a 3×3 stride-2 convolution down between levels. A
middle block ResBlock, attention, ResBlock at 8×8. The decoder is DDPM's (Ho et al. 2020, as improved-diffusion has it):
three ResBlocks a level, each reading one skip concatenated to its input (the input convolution's, every encoder block's
and every downsample's outputs), attention after each at 16×16 and 8×8, and a nearest-neighbour upsample and a 3×3
convolution between levels; GroupNorm, SiLU and a 3×3 convolution to 3 channels. 18,536,323 parameters (74 MB in fp32):
10.2 M in the decoder, 4.3 M in the encoder, 2.8 M in the middle block; 1.9 M of them in the eleven attention blocks.
(DDPM's own 35.7 M CIFAR-10 model is wider: base 128, (1, 2, 2, 2).)

The training step is DDPM's (Ho et al. 2020, algorithm 1) inside the model's forward, as lucidrains'
GaussianDiffusion has it: a timestep per image drawn with `torch.randint` on the images' device, Gaussian noise
`randn_like` the images, x_t = sqrt(ᾱ_t)·x_0 + sqrt(1 − ᾱ_t)·ε with ᾱ from a linear β schedule (1e-4 … 0.02 over 1000
steps, a buffer, gathered by indexing with the timesteps); the forward returns the predicted and the true noise and
the loss is their mean squared error. No `.item()`, no shape that depends on a value: `make_batch` gives the clean
images and no targets (the noise is the target, drawn in the step), so the step traces on the meta device.

What sets its step: 3×3 convolutions (39 of the 40 GFLOP an image of a training step; 6.5 G multiply-adds forward), most
of them at 64×64 and 32×32 with 64 and 128 channels (narrow for a GPU's matmul units), beside many memory-bound ops on
every activation (GroupNorm and SiLU twice a ResBlock, the timestep's broadcast add, the skip concatenations, the
upsamples); attention over 256 and 64 pixels is a small share. So the memory traffic of the activations as much as the
convolutions' rate, and the activations' memory caps the batch.

    gpuplan collect --workload examples/ddpm_unet.py:build --profile standard

`build_tiny()` keeps the four levels, the attention and the step on 16×16 images with 16 channels at the first level,
for the CPU tests.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

IMAGE, BASE, MULTS, RES_BLOCKS, HEAD_CHANNELS = 64, 64, (1, 2, 2, 4), 2, 64
ATTENTION_LEVELS = (2, 3)  # the third and fourth levels: 16×16 and 8×8 at 64×64
STEPS, BETA_START, BETA_END = 1000, 1e-4, 0.02
BATCH_START = 8  # gpuplan's main batch on a GPU is 8 × this: 64 images


def norm(channels: int) -> nn.GroupNorm:
    """GroupNorm in 32 groups (every width of the real size divides by 32; the tiny size's take fewer groups)."""
    return nn.GroupNorm(math.gcd(32, channels), channels)


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """The transformer's sinusoidal position encoding of each timestep, (batch, dim)."""
    freqs = torch.exp(-math.log(10_000) * torch.arange(dim // 2, device=t.device) / (dim // 2))
    angles = t.float()[:, None] * freqs[None]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


class ResBlock(nn.Module):
    """GN, SiLU, conv; + the timestep's projection; GN, SiLU, conv; + the input (1×1 conv where the width changes)."""

    def __init__(self, cin: int, cout: int, temb: int):
        super().__init__()
        self.block1 = nn.Sequential(norm(cin), nn.SiLU(), nn.Conv2d(cin, cout, 3, padding=1))
        self.time = nn.Sequential(nn.SiLU(), nn.Linear(temb, cout))
        self.block2 = nn.Sequential(norm(cout), nn.SiLU(), nn.Conv2d(cout, cout, 3, padding=1))
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        h = self.block1(x) + self.time(emb)[:, :, None, None]
        return self.skip(x) + self.block2(h)


class AttentionBlock(nn.Module):
    """Self-attention over the pixels: GN, 1×1 conv to q, k, v, heads of 64 channels, 1×1 projection, residual."""

    def __init__(self, channels: int):
        super().__init__()
        self.heads = max(1, channels // HEAD_CHANNELS)  # one head at the tiny size
        self.norm = norm(channels)
        self.qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, hgt, wid = x.shape
        qkv = self.qkv(self.norm(x)).reshape(b, 3, self.heads, c // self.heads, hgt * wid)
        q, k, v = qkv.transpose(-1, -2).unbind(1)  # each (batch, heads, pixels, head channels)
        y = F.scaled_dot_product_attention(q, k, v)
        return x + self.proj(y.transpose(-1, -2).reshape(b, c, hgt, wid))


class Level(nn.Module):
    """Two ResBlocks, each followed by attention at the levels that have it; every output kept for a skip."""

    def __init__(self, cins: list[int], cout: int, temb: int, attention: bool):
        super().__init__()
        self.res = nn.ModuleList(ResBlock(cin, cout, temb) for cin in cins)
        self.attn = nn.ModuleList((AttentionBlock(cout) if attention else nn.Identity()) for _ in cins)


class UNet(nn.Module):
    """DDPM's layout: the skips are the input convolution's, every encoder block's and every downsample's outputs;
    the decoder has one ResBlock more a level than the encoder, each reading one skip."""

    def __init__(self, base: int = BASE):
        super().__init__()
        temb, widths = 4 * base, [base * m for m in MULTS]
        self.base = base
        self.time = nn.Sequential(nn.Linear(base, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.conv_in = nn.Conv2d(3, base, 3, padding=1)
        self.down, self.downsample, skips = nn.ModuleList(), nn.ModuleList(), [base]
        for i, cout in enumerate(widths):
            self.down.append(Level([skips[-1]] + [cout] * (RES_BLOCKS - 1), cout, temb, i in ATTENTION_LEVELS))
            skips += [cout] * RES_BLOCKS
            if i < len(widths) - 1:
                self.downsample.append(nn.Conv2d(cout, cout, 3, stride=2, padding=1))
                skips.append(cout)
        mid = widths[-1]
        self.mid = nn.ModuleList([ResBlock(mid, mid, temb), AttentionBlock(mid), ResBlock(mid, mid, temb)])
        self.up, self.upsample, h = nn.ModuleList(), nn.ModuleList(), mid
        for i, cout in reversed(list(enumerate(widths))):
            cins = [c + skips.pop() for c in [h] + [cout] * RES_BLOCKS]
            self.up.append(Level(cins, cout, temb, i in ATTENTION_LEVELS))
            h = cout
            if i > 0:
                self.upsample.append(nn.Conv2d(cout, cout, 3, padding=1))
        self.out = nn.Sequential(norm(base), nn.SiLU(), nn.Conv2d(base, 3, 3, padding=1))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        emb = self.time(timestep_embedding(t, self.base))
        h = self.conv_in(x)
        skips = [h]
        for i, level in enumerate(self.down):
            for res, attn in zip(level.res, level.attn, strict=True):
                h = attn(res(h, emb))
                skips.append(h)
            if i < len(self.downsample):
                h = self.downsample[i](h)
                skips.append(h)
        h = self.mid[2](self.mid[1](self.mid[0](h, emb)), emb)  # res, attention, res
        for i, level in enumerate(self.up):
            for res, attn in zip(level.res, level.attn, strict=True):
                h = attn(res(torch.cat([h, skips.pop()], dim=1), emb))
            if i < len(self.upsample):
                h = self.upsample[i](F.interpolate(h, scale_factor=2.0, mode="nearest"))
        return self.out(h)


class Diffusion(nn.Module):
    """DDPM's training step: noise the clean images at a random timestep each, predict the noise."""

    def __init__(self, base: int = BASE, steps: int = STEPS):
        super().__init__()
        self.unet = UNet(base)
        alphas_bar = torch.cumprod(1.0 - torch.linspace(BETA_START, BETA_END, steps), dim=0)
        self.register_buffer("sqrt_ab", alphas_bar.sqrt(), persistent=False)
        self.register_buffer("sqrt_one_minus_ab", (1.0 - alphas_bar).sqrt(), persistent=False)

    def forward(self, x0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = torch.randint(0, self.sqrt_ab.shape[0], (x0.shape[0],), device=x0.device)
        noise = torch.randn_like(x0)
        x_t = self.sqrt_ab[t][:, None, None, None] * x0 + self.sqrt_one_minus_ab[t][:, None, None, None] * noise
        return self.unet(x_t, t), noise


def noise_loss(outputs: tuple[torch.Tensor, torch.Tensor], targets: None) -> torch.Tensor:
    """The mean squared error between the predicted and the true noise (the targets are drawn in the step)."""
    predicted, noise = outputs
    return F.mse_loss(predicted.float(), noise)


def workload(name: str, image: int, base: int, batch_start: int) -> dict:
    def make_batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, None]:
        return torch.randn(batch_size, 3, image, image, device=device), None  # clean images in [-1, 1]'s scale

    return {"name": name, "model": Diffusion(base), "make_batch": make_batch, "loss": noise_loss,
            "unit": "images", "batch_start": batch_start}


def build() -> dict:
    """The DDPM UNet at 64×64, base 64, multipliers (1, 2, 2, 4): 18.5 M parameters."""
    return workload("ddpm-unet", IMAGE, BASE, BATCH_START)


def build_tiny() -> dict:
    """The same four levels, attention and step on 16×16 images with 16 channels at the first level: for CPU tests."""
    return workload("ddpm-unet-cpu", 16, 16, 2)
