import { useEffect, useState } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { Link, Redirect, Route, Router, Switch, useLocation } from "wouter";
import { keyStore, setUnauthorizedHandler } from "./api/client.ts";
import { SignIn } from "./screens/sign-in.tsx";
import { Overview } from "./screens/overview.tsx";
import { UsersScreen } from "./screens/users.tsx";
import { UserScreen } from "./screens/user.tsx";
import { PlansScreen } from "./screens/plans.tsx";
import { TeamsScreen } from "./screens/teams.tsx";
import { TeamScreen } from "./screens/team.tsx";
import { WebhooksScreen } from "./screens/webhooks.tsx";
import { KeysScreen } from "./screens/keys.tsx";
import { QuickStartScreen } from "./screens/quickstart.tsx";

const NAV = [
  { href: "/", label: "Overview" },
  { href: "/users", label: "Users" },
  { href: "/teams", label: "Teams" },
  { href: "/plans", label: "Plans" },
  { href: "/webhooks", label: "Webhooks" },
  { href: "/keys", label: "API keys" },
];

export function App() {
  const [key, setKey] = useState(keyStore.get());
  const [notice, setNotice] = useState<string | null>(null);
  const queryClient = useQueryClient();

  useEffect(() => {
    setUnauthorizedHandler((message) => {
      keyStore.clear();
      queryClient.clear();
      setNotice(message);
      setKey(null);
    });
  }, [queryClient]);

  const signOut = () => {
    keyStore.clear();
    queryClient.clear();
    setNotice("Signed out. The key is forgotten in this tab.");
    setKey(null);
  };

  return (
    <Router base="/console">
      {key ? (
        <Shell onSignOut={signOut} />
      ) : (
        <SignIn
          notice={notice}
          onSignedIn={(k) => {
            keyStore.set(k);
            setNotice(null);
            setKey(k);
          }}
        />
      )}
    </Router>
  );
}

function Shell({ onSignOut }: { onSignOut: () => void }) {
  const [location] = useLocation();
  const [menu, setMenu] = useState(false);
  useEffect(() => setMenu(false), [location]);
  const active = (href: string) => (href === "/" ? location === "/" : location.startsWith(href));
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/" className="brand">
          <span className="logo" aria-hidden="true">◔</span> Meterline
        </Link>
        <button type="button" className="menu-toggle secondary" aria-expanded={menu} aria-controls="nav" onClick={() => setMenu(!menu)}>
          Menu
        </button>
        <nav id="nav" aria-label="Screens" className={menu ? "open" : ""}>
          {NAV.map((n) => (
            <Link key={n.href} href={n.href} aria-current={active(n.href) ? "page" : undefined} className={active(n.href) ? "active" : ""}>
              {n.label}
            </Link>
          ))}
        </nav>
        <button type="button" className="secondary signout" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Switch>
          <Route path="/" component={Overview} />
          <Route path="/users" component={UsersScreen} />
          <Route path="/users/:id">{(p) => <UserScreen id={addressedId("users", p.id)} />}</Route>
          <Route path="/teams" component={TeamsScreen} />
          <Route path="/teams/:id">{(p) => <TeamScreen id={addressedId("teams", p.id)} />}</Route>
          <Route path="/plans" component={PlansScreen} />
          <Route path="/webhooks">{() => <WebhooksScreen />}</Route>
          <Route path="/webhooks/:id">{(p) => <WebhooksScreen selected={p.id} />}</Route>
          <Route path="/keys" component={KeysScreen} />
          <Route path="/quickstart" component={QuickStartScreen} />
          <Route>
            <Redirect to="/" />
          </Route>
        </Switch>
      </main>
    </div>
  );
}

/**
 * The id a user's or team's address names, decoded once from the address as sent: wouter hands
 * routes the path through decodeURI already, so decoding its parameter again broke ids with a
 * "%" ("50%off" threw, "ext%40acme" read as "ext@acme"). Links encode ids with encodeURIComponent.
 */
function addressedId(kind: "users" | "teams", matched: string): string {
  const raw = new RegExp(`/${kind}/([^/]+)/?$`).exec(window.location.pathname)?.[1];
  if (raw === undefined) return matched;
  try {
    return decodeURIComponent(raw);
  } catch {
    return matched;
  }
}
