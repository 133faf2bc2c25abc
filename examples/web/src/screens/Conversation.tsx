// A conversation: its newest messages (new ones arrive through Live's `messageReceived`, whose
// payload carries this very list), read receipts, and the typing indicator both ways.
import { useMutation, useQuery, useSubscription } from "@apollo/client/react";
import { useEffect, useRef, useState } from "react";

import { graphql } from "../gql";
import { ErrorNote } from "./ErrorNote";
import { presenceText } from "./Live";

const ConversationQuery = graphql(`
  query Conversation($with: String!) {
    me {
      id
      user {
        id
        login
      }
      conversation(with: $with) {
        ...ConversationState
        with {
          ...UserPresence
        }
      }
    }
  }
`);

const SendMessage = graphql(`
  mutation SendMessage($to: String!, $content: String!, $clientMessageId: String) {
    sendMessage(to: $to, content: $content, clientMessageId: $clientMessageId) {
      ...Message
      talkPartner {
        ...PartnerRow
      }
      conversation {
        ...ConversationState
      }
    }
  }
`);

// Selecting the conversation's count too updates both the talk-partner row and the conversation.
const MarkRead = graphql(`
  mutation MarkConversationRead($with: String!) {
    markConversationRead(with: $with) {
      id
      unreadCount
      conversation {
        id
        unreadCount
      }
    }
  }
`);

const SetTyping = graphql(`
  mutation SetTyping($with: String!, $typing: Boolean!) {
    setTyping(with: $with, typing: $typing)
  }
`);

// Not state to cache: who is typing to the viewer right now.
const Typing = graphql(`
  subscription Typing {
    typing {
      typing
      from {
        id
        login
      }
    }
  }
`);

/** The gateway lets a typing indicator lapse a few seconds after the last `setTyping(true)`. */
const TYPING_RENEW_MS = 2500;

export function Conversation({ login }: { login: string }) {
  const { data, error } = useQuery(ConversationQuery, { variables: { with: login } });
  const [send, sending] = useMutation(SendMessage);
  const [markRead] = useMutation(MarkRead);
  const [setTyping] = useMutation(SetTyping);
  const [draft, setDraft] = useState("");
  const [partnerTyping, setPartnerTyping] = useState(false);
  const typingSentAt = useRef(0);

  useSubscription(Typing, {
    onData: ({ data: event }) => {
      const typing = event.data?.typing;
      if (typing?.from.login === login) setPartnerTyping(typing.typing);
    },
  });

  // Whatever arrives while the conversation is on screen is read.
  const unread = data?.me?.conversation.unreadCount ?? 0;
  useEffect(() => {
    if (unread > 0) void markRead({ variables: { with: login } });
  }, [unread, login, markRead]);

  if (error) return <ErrorNote error={error} />;
  if (!data?.me) return <p>Loading…</p>;
  const me = data.me.user.login;
  const conversation = data.me.conversation;
  const messages = [...conversation.messages.nodes].reverse(); // the list is newest first
  const readAt = conversation.partnerReadAt ? Date.parse(conversation.partnerReadAt) : null;
  const lastSeen = messages.findLast((m) => m.sender.login === me && readAt !== null && Date.parse(m.sentAt) <= readAt);

  const typed = (text: string) => {
    setDraft(text);
    const now = Date.now();
    if (text && now - typingSentAt.current > TYPING_RENEW_MS) {
      typingSentAt.current = now;
      void setTyping({ variables: { with: login, typing: true } });
    }
  };
  const submit = async () => {
    const content = draft.trim();
    if (!content) return;
    typingSentAt.current = 0;
    void setTyping({ variables: { with: login, typing: false } });
    // The key makes a retry after a lost answer store the message once.
    const sent = await send({ variables: { to: login, content, clientMessageId: crypto.randomUUID() } }).catch(
      () => null, // shown from the hook's `error`
    );
    if (sent) setDraft("");
  };

  return (
    <section>
      <h1>
        {conversation.with.firstname} <span className="muted">@{login}</span>
      </h1>
      <p className="muted presence" aria-label="presence">
        {presenceText(conversation.with.presence)}
      </p>
      <ol className="messages" aria-label="Messages">
        {messages.map((message) => (
          <li key={message.id} className={message.sender.login === me ? "mine" : "theirs"}>
            <span className="content">{message.content}</span>
            <time dateTime={message.sentAt}>{new Date(message.sentAt).toLocaleTimeString()}</time>
            {message.id === lastSeen?.id && <span className="seen">Seen</span>}
          </li>
        ))}
      </ol>
      <p className="muted typing" aria-live="polite">
        {partnerTyping ? `${conversation.with.firstname} is typing…` : "\u00a0"}
      </p>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void submit();
        }}
      >
        <input
          aria-label="Message"
          value={draft}
          onChange={(event) => typed(event.target.value)}
          placeholder="Write a message"
          autoFocus
        />
        <button type="submit" disabled={sending.loading}>
          Send
        </button>
      </form>
      <ErrorNote error={sending.error} />
    </section>
  );
}
