#!/usr/bin/env bash
# Two "nodes" of one GPU each on one 2-GPU host, joined by torchrun's static rendezvous on localhost: once
# with NCCL's normal transports (P2P over NVLink between the nodes), once with the inter-node path forced onto
# NCCL's socket transport over loopback. Then the model's prediction of the socket run from the NVLink run and
# the socket run's measured bandwidth, and its error (benchmarks/compare_two_node_emulation.py).
#
#   bash benchmarks/gpu_two_node_emulation.sh [MACHINE_PREFIX]     (repository root, on a 2-GPU host)
#
# Inputs: MACHINE_PREFIX (default h200-2x1); $OUT, the folder the results go to; WORK, where the collections
# are built (default: a new temporary folder). Outputs: $OUT/two-node.tgz with <PREFIX>-nvlink/ and
# <PREFIX>-socket/ (documents and one log per node; unpack under results/ to publish them) and the comparison
# (compare.txt, also inside the tarball). About 4 minutes; each node is stopped after NODE_LIMIT
# seconds (default 240).
set -u
export PYTHONUNBUFFERED=1
# Never NVLink multicast (NVLS) on shared machines; the launcher enforces it too.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PREFIX=${1:-h200-2x1}
OUT=${OUT:?OUT must name the folder the results go to}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$OUT" "$WORK"
two_nodes() {  # $1 machine id, $2 port; the socket run's NCCL switches come from the environment
    # Each "node" collects into a folder of its own, as two real nodes would: rank 0 writes the documents
    # ($WORK/$1), node 1 writes none (its folder keeps only its log). One shared folder would have node 1
    # refused by node 0's run lock and node 0 waiting at the rendezvous until its time limit.
    # Each node is stopped after NODE_LIMIT s, so one that waits for a peer that died cannot hold the run.
    mkdir -p "$WORK/$1" "$WORK/node1-$1"
    for rank in 1 0; do
        local out="$WORK" log="$WORK/$1/log-node$rank.txt"
        [ "$rank" = 1 ] && out="$WORK/node1-$1" && log="$WORK/node1-$1/log-node1.txt"
        CUDA_VISIBLE_DEVICES=$rank timeout "${NODE_LIMIT:-240}" python3 -m collectors --out "$out" --machine "$1" \
            --only collectives ddp --profile standard --gpus 1 --nnodes 2 --node-rank $rank \
            --rdzv-endpoint 127.0.0.1:$2 ${COLLECT_ARGS:-} > "$log" 2>&1 &
    done
    wait
    cp "$WORK/node1-$1/log-node1.txt" "$WORK/$1/" 2>/dev/null
    tail -n 4 "$WORK/$1/log-node0.txt" "$WORK/$1/log-node1.txt"
}
S=$(date +%s)
two_nodes "$PREFIX-nvlink" 29501
M=$(date +%s); echo "normal transports: $((M-S)) s"
( export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo
  two_nodes "$PREFIX-socket" 29502 )
E=$(date +%s); echo "socket transport: $((E-M)) s"
PYTHONPATH=$PWD python3 benchmarks/compare_two_node_emulation.py "$WORK/$PREFIX-nvlink" "$WORK/$PREFIX-socket" \
    | tee "$WORK/compare.txt"
tar czf "$OUT/two-node.tgz" -C "$WORK" "$PREFIX-nvlink" "$PREFIX-socket" compare.txt && ls -l "$OUT/two-node.tgz"
