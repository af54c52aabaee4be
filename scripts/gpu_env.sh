# Sourced by the scripts that run on the GPU machines: the library path of their image (NCCL and
# cuBLAS live inside PyTorch's environment there) and NVLink multicast off, always.
for d in /opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib \
         /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
export NCCL_NVLS_ENABLE=0   # never NVLink multicast on the shared machines
