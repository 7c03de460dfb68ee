"""`mcache bench`: results files (schema), the GPU runner, comparison and exporters."""
