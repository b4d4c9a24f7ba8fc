"""The model held against measurements and published tables, and the error bands those residuals set."""
