/**
 * True for a unique-index violation. Checks the code rather than the class, because Agenda's
 * backend may load its own copy of the driver.
 */
export function isDuplicateKey(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === 11000;
}
