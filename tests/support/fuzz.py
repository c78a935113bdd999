"""Byte-level fuzzing for the decoders: valid seed records with a few random bytes flipped,
cut off or inserted (deterministic per ``seed``, so a failure reproduces)."""
import random
from collections.abc import Iterator, Sequence


def mutations(seeds: Sequence[bytes], count: int, seed: int, most: int = 3) -> Iterator[bytes]:
    """``count`` inputs, each a seed with 1 to ``most`` edits: a byte replaced, the rest cut
    off, or a byte inserted."""
    rng = random.Random(seed)
    for _ in range(count):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, most)):
            op = rng.randrange(3)
            if op == 0 and data:
                data[rng.randrange(len(data))] = rng.randrange(256)
            elif op == 1:
                data = data[:rng.randrange(len(data) + 1)]
            else:
                data[rng.randrange(len(data) + 1):0] = bytes([rng.randrange(256)])
        yield bytes(data)
