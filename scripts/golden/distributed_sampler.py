# scripts/golden/distributed_sampler.py: golden indices for tests/distributed/test_sampler.cpp.
#
# Run by hand with Debian's PyTorch (the tests never need it):
#     /usr/bin/python3 scripts/golden/distributed_sampler.py
# and paste the printed lists into the test. PyTorch's DistributedSampler without shuffling (the
# shuffled order comes from torch.randperm, which tapegrad's generator does not reproduce; the
# test checks the shuffled case by its rules instead): every rank's indices and len(sampler) for a
# few dataset sizes, world sizes and both drop_last settings.
from torch.utils.data.distributed import DistributedSampler

for size, replicas in [(10, 3), (10, 2), (2, 3), (7, 4), (0, 2)]:
    for drop_last in (False, True):
        shards = []
        for rank in range(replicas):
            s = DistributedSampler(range(size), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
            shards.append(list(s))
        print(f"size {size}, {replicas} replicas, drop_last {drop_last}: len {len(shards[0])}, "
              + "; ".join(f"rank {r} {shard}" for r, shard in enumerate(shards)))

try:
    DistributedSampler(range(4), num_replicas=2, rank=2)
except ValueError as e:
    print("error:", e)
