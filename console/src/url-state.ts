import { useLocation, useSearch } from "wouter";

/**
 * A screen's state (filters, window, page) lives in the URL's query so that a link shares it.
 * `set` merges a patch; empty values are dropped.
 */
export function useUrlState(): [URLSearchParams, (patch: Record<string, string | number | null | undefined>) => void] {
  const search = useSearch();
  const [location, navigate] = useLocation();
  const params = new URLSearchParams(search);
  const set = (patch: Record<string, string | number | null | undefined>) => {
    const next = new URLSearchParams(search);
    for (const [k, v] of Object.entries(patch)) {
      if (v == null || v === "") next.delete(k);
      else next.set(k, String(v));
    }
    const q = next.toString();
    navigate(q ? `${location}?${q}` : location, { replace: true });
  };
  return [params, set];
}

/** Cursor paging kept in the URL: the current cursor and the stack of earlier ones. */
export function usePaging(params: URLSearchParams, set: (patch: Record<string, string | null>) => void, name = "cursor") {
  const cursor = params.get(name) ?? undefined;
  const trail = (params.get(`${name}s`) ?? "").split(",").filter(Boolean).map(decodeURIComponent);
  return {
    cursor,
    hasPrev: cursor !== undefined,
    next: (nextCursor: string) => set({ [name]: nextCursor, [`${name}s`]: [...trail, cursor ?? "-"].map(encodeURIComponent).join(",") }),
    prev: () => {
      const before = trail.slice(0, -1);
      const last = trail[trail.length - 1];
      set({ [name]: last && last !== "-" ? last : null, [`${name}s`]: before.map(encodeURIComponent).join(",") || null });
    },
    reset: { [name]: null, [`${name}s`]: null } as Record<string, null>,
  };
}
