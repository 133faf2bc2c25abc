import { ApolloProvider } from "@apollo/client/react";
import { useCallback, useEffect, useMemo, useState } from "react";

import { makeClient } from "./apollo";
import { href, navigate, useRoute } from "./router";
import { Blog } from "./screens/Blog";
import { Chats } from "./screens/Chats";
import { Conversation } from "./screens/Conversation";
import { Live, useUnreadTotal } from "./screens/Live";
import { Mailbox } from "./screens/Mailbox";
import { Rooms } from "./screens/Rooms";
import { SignIn, SignOutButton } from "./screens/SignIn";

const TOKEN = "gateway-token";

/** The session is the bearer token; each session gets a client (and cache) of its own. */
export function App() {
  const [token, setToken] = useState(() => localStorage.getItem(TOKEN));
  const session = useCallback((next: string | null) => {
    if (next) localStorage.setItem(TOKEN, next);
    else localStorage.removeItem(TOKEN);
    setToken(next);
  }, []);
  const { client, dispose } = useMemo(() => makeClient(token, () => session(null)), [token, session]);
  useEffect(() => dispose, [dispose]);

  return (
    <ApolloProvider client={client}>
      {token ? <SignedIn onSignedOut={() => session(null)} /> : <SignedOut onSignedIn={session} />}
    </ApolloProvider>
  );
}

function SignedOut({ onSignedIn }: { onSignedIn: (token: string) => void }) {
  const [screen] = useRoute();
  return (
    <>
      <nav>
        <a href={href()}>Sign in</a>
        <a href={href("blog")}>Blog</a>
      </nav>
      <main>{screen === "blog" ? <Blog /> : <SignIn onSignedIn={onSignedIn} />}</main>
    </>
  );
}

function SignedIn({ onSignedOut }: { onSignedOut: () => void }) {
  const route = useRoute();
  const [screen, name] = route;
  const unread = useUnreadTotal();
  let main;
  if (screen === "chat" && name) main = <Conversation key={name} login={name} />;
  else if (screen === "rooms") main = <Rooms name={name} />;
  else if (screen === "mail") main = <Mailbox route={route.slice(1)} />;
  else if (screen === "blog") main = <Blog />;
  else main = <Chats />;
  return (
    <>
      {/* The live updates every screen relies on, kept while signed in. */}
      <Live />
      <nav>
        <a href={href()}>Chats{unread > 0 && <span className="badge">{unread}</span>}</a>
        <a href={href("rooms")}>Rooms</a>
        <a href={href("mail")}>Mail</a>
        <a href={href("blog")}>Blog</a>
        <SignOutButton
          onSignedOut={() => {
            onSignedOut();
            navigate();
          }}
        />
      </nav>
      <main>{main}</main>
    </>
  );
}
