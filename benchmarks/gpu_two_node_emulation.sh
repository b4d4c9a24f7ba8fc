# 2-GPU device script (nvidia-h200-x2): two "nodes" of one GPU each on one host, joined by torchrun's
# static rendezvous on localhost; once with NCCL's normal transports (P2P over NVLink between the nodes),
# once with the inter-node path forced onto NCCL's socket transport over loopback. Then the model's
# prediction of the socket run from the NVLink run + the socket run's measured bandwidth, and its error.
#   run: bash benchmarks/gpu_two_node_emulation.sh   (about 4 minutes; results under $OUT and results/)
set -u
export PYTHONUNBUFFERED=1
# Never NVLink multicast (NVLS) on shared machines; the launcher enforces it too.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
two_nodes() {  # $1 machine id, $2 port; the socket run's NCCL switches come from the environment
    for rank in 1 0; do
        CUDA_VISIBLE_DEVICES=$rank python3 -m collectors --out /tmp/r --machine "$1" --only collectives ddp \
            --profile standard --gpus 1 --nnodes 2 --node-rank $rank --rdzv-endpoint 127.0.0.1:$2 \
            > "/tmp/r/$1-node$rank.log" 2>&1 &
    done
    wait
    tail -n 4 "/tmp/r/$1-node0.log"
}
mkdir -p /tmp/r
S=$(date +%s)
two_nodes h200-2x1-nvlink 29501
M=$(date +%s); echo "normal transports: $((M-S)) s"
( export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo
  two_nodes h200-2x1-socket 29502 )
E=$(date +%s); echo "socket transport: $((E-M)) s"
mkdir -p results && cp -r /tmp/r/h200-2x1-nvlink /tmp/r/h200-2x1-socket results/
python3 benchmarks/compare_two_node_emulation.py results/h200-2x1-nvlink results/h200-2x1-socket | tee "$OUT/compare.txt"
tar czf "$OUT/two_node.tgz" -C /tmp r
