"""The `dataloader` collector: a JPEG dataset on disk (jpeg_dataset), the ImageNet input pipeline
(image_pipeline) and the DataLoader sweep over workers (loader_sweep, process_group). Entry: `collect.py`."""
