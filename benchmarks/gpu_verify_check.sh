#!/usr/bin/env bash
# One device call: the GPU test suite plus `kvscale verify --gpu` on the bundled examples.
#   PYTHONPATH=. bash benchmarks/gpu_verify_check.sh OUTDIR
set -u
out=${1:-/tmp/kvscale-gpu}
mkdir -p "$out"
export PYTHONPATH=.
nvidia-smi -L
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(0))"
python3 -m pytest -q -p no:cacheprovider tests/kernel/test_triton_cache_gpu.py tests/cli/test_verify_gpu.py 2>&1 | tail -n 5
for ex in llm-compressor-fp8 llm-compressor-attn-head modelopt-fp8 broken; do
  python3 -m kvscale verify "examples/$ex" --gpu --json > "$out/verify-$ex.json"
  echo "verify --gpu examples/$ex: exit $?"
done
python3 -m kvscale verify examples/wrong-scale --gpu --activations examples/activations/tiny-llama-kv.safetensors \
  --json > "$out/verify-wrong-scale.json"
echo "verify --gpu examples/wrong-scale --activations: exit $? (expected 1)"
python3 -m kvscale verify examples/wrong-scale --gpu --activations examples/activations/tiny-llama-kv.safetensors \
  2>&1 | tail -n 6
python3 -m kvscale verify examples/llm-compressor-fp8 --gpu --tokens 65536 2>&1 | tail -n 4
