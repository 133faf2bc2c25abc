// The main view: everyone the viewer has talked with, most recent first, with presence and
// unread counts. It reads the list Live keeps up to date; nothing here subscribes.
import { useQuery } from "@apollo/client/react";
import { useState } from "react";

import { href, navigate } from "../router";
import { ErrorNote } from "./ErrorNote";
import { TalkPartners, presenceText } from "./Live";

export function Chats() {
  const { data, error } = useQuery(TalkPartners);
  const [to, setTo] = useState("");
  if (error) return <ErrorNote error={error} />;
  if (!data?.me) return <p>Loading…</p>;
  const rows = data.me.talkPartners.nodes;
  return (
    <section>
      <h1>Chats</h1>
      <p className="muted">
        Signed in as {data.me.user.firstname} ({data.me.user.login})
      </p>
      <ul className="rows" aria-label="Talk partners">
        {rows.map((row) => (
          <li key={row.id}>
            <a href={href("chat", row.partner.login)}>
              <span className={row.partner.presence?.online ? "dot online" : "dot"} />
              <strong>{row.partner.firstname}</strong> <span className="muted">@{row.partner.login}</span>
              <span className="muted presence">{presenceText(row.partner.presence)}</span>
              {row.unreadCount > 0 && (
                <span className="badge" aria-label="unread">
                  {row.unreadCount}
                </span>
              )}
              <div className="muted">{row.lastMessage}</div>
            </a>
          </li>
        ))}
        {rows.length === 0 && <li className="muted">No conversations yet.</li>}
      </ul>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (to.trim()) navigate("chat", to.trim().toLowerCase());
        }}
      >
        <label>
          Write to <input value={to} onChange={(event) => setTo(event.target.value)} placeholder="login" />
        </label>
        <button type="submit">Open</button>
      </form>
    </section>
  );
}
