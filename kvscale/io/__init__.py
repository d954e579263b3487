"""Reading and writing files: safetensors, checkpoint layouts, atomic output directories."""
