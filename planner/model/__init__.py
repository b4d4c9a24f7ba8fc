"""What was measured, modelled: one GPU's step split and predicted on another, its bound, memory, a host's feed."""
