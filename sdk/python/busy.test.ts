// The Python client against a busy service: an all-in-one process holding at most one batch of 100
// events (INGESTION_MAX_EVENTS_IN_FLIGHT from its env), so that clients flushing together meet 429s
// with Retry-After; pytest runs tests/test_busy_stack.py against it (python.test.ts leaves it out).
import { pytestFileSuite } from "./all-in-one.ts";

pytestFileSuite("sdk/python: a busy service, 429 with Retry-After, clients back off", "pyb", { INGESTION_MAX_EVENTS_IN_FLIGHT: "100" }, "tests/test_busy_stack.py");
