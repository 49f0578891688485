"""The model runtimes, one folder: which embedder a setting means (``factory.py``), the fake
embedder and sentence-transformers on torch (``embedders.py``), ONNX Runtime for embedders and
cross-encoders (``onnx_runtime.py``, ``onnx_embedder.py``, the packaged MiniLM's graph built from
its safetensors in ``onnx_graph.py``), and model servers (``remote.py``).

Nothing is imported here, so a cold command that needs one helper (the model cache's folder)
does not load numpy or a runtime."""
