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
for (const { read, answer } of started) {
  let first = true;
  void queryClient.prefetchQuery({
    queryKey: read.queryKey,
    queryFn: () => {
      if (!first) return read.queryFn();
      first = false;
      return answer;
    },
  });
}

createRoot(document.getElementById("root")!).render(
  <QueryClientProvider client={queryClient}>
    <App />
  </QueryClientProvider>,
);
