/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "base/hashmap.h"
#include "tests.h"
#include "common/util.h"

int main(void)
{
        enum { N = 50000 };
        static char keys[N][16];
        Hashmap h;
        size_t i = 0, seen = 0;

        hashmap_init(&h, hashmap_key_self);
        for (int k = 0; k < N; k++) {
                snprintf(keys[k], sizeof(keys[k]), "key%d", k);
                if (hashmap_put(&h, keys[k]) != 0)
                        CHECK(false);
        }
        CHECK(hashmap_size(&h) == N);
        char again[] = "key7";
        CHECK(hashmap_put(&h, again) == -EEXIST);
        CHECK(hashmap_get(&h, "key49999") == keys[49999]);
        CHECK(hashmap_get(&h, "nope") == NULL);

        /* Removal needs the right value: an index entry of another object is never dropped. */
        char other[] = "key5";
        CHECK(hashmap_remove(&h, other) == NULL);
        CHECK(hashmap_get(&h, "key5") == keys[5]);
        for (int k = 0; k < N; k += 2)
                if (hashmap_remove(&h, keys[k]) != keys[k])
                        CHECK(false);
        CHECK(hashmap_size(&h) == N / 2);
        CHECK(hashmap_get(&h, "key4") == NULL);
        CHECK(hashmap_get(&h, "key5") == keys[5]);

        /* Tombstones are reused and the survivors stay reachable. */
        for (int k = 0; k < N; k += 2)
                if (hashmap_put(&h, keys[k]) != 0)
                        CHECK(false);
        while (hashmap_iterate(&h, &i))
                seen++;
        CHECK(seen == N);

        /* Emptied, it stays usable with the same keys. */
        hashmap_deinit(&h);
        CHECK(hashmap_size(&h) == 0 && hashmap_get(&h, "key1") == NULL);
        CHECK(hashmap_put(&h, keys[1]) == 0 && hashmap_get(&h, "key1") == keys[1]);
        hashmap_deinit(&h);
        return tests_summary();
}
