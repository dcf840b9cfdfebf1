// First: the screen's reads leave before the rest of the app is evaluated (arrival.ts).
import { started } from "./arrival.ts";
import { createRoot } from "react-dom/client";
import { QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { ApiError } from "./api/client.ts";
import { App } from "./app.tsx";
import "./styles.css";

const queryClient = new QueryClient({
  queryCache: new QueryCache(),
  defaultOptions: {
    queries: {
      staleTime: 15_000,
      refetchOnWindowFocus: true,
      // A 503 (or no answer) is retried until the service is back; other refusals are final.
      retry: (count, error) => error instanceof ApiError && error.unavailable && count < 1000,
      retryDelay: (count) => Math.min(1000 * 2 ** count, 5000),
      placeholderData: (previous: unknown) => previous,
    },
  },
});

// The reads already on their way fill the cache: the screen's queries find them in flight. A
// retry (a 503) asks again.
const arrived = started.map(({ read, answer }) => {
  let first = true;
  return queryClient.prefetchQuery({
    queryKey: read.queryKey,
    queryFn: () => {
      if (!first) return read.queryFn();
      first = false;
      return answer;
    },
  });
});

/**
 * How long the first render waits for those reads. Their answers usually come back while this
 * script is still being evaluated; rendered with them in the cache, the screen shows its data
 * in its first paint. Rendered before, it would show a loading state and take the answers only
 * once its queries subscribe, in effects that Preact runs after the next frame. A slow read
 * gets the loading state after this long.
 */
const FIRST_RENDER_WAIT_MS = 150;

void Promise.race([Promise.all(arrived), new Promise((resolve) => setTimeout(resolve, FIRST_RENDER_WAIT_MS))]).then(() =>
  createRoot(document.getElementById("root")!).render(
    <QueryClientProvider client={queryClient}>
      <App />
    </QueryClientProvider>,
  ),
);
