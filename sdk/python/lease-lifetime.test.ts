// The Python client's lease under a call longer than its lifetime: an all-in-one process whose
// leases lapse 200 ms after their lifetime (LEASE_GRACE_MS), so that a one-second lease outlived
// twice makes a short test; pytest runs tests/test_lease_lifetime_stack.py against it
// (python.test.ts leaves it out).
import { pytestFileSuite } from "./all-in-one.ts";

pytestFileSuite("sdk/python: a lease kept under a call longer than its lifetime", "pyl", { LEASE_GRACE_MS: "200" }, "tests/test_lease_lifetime_stack.py");
