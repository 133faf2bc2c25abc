// The mailbox: folders with unread counts, a folder's newest emails, an email with signed
// download links, and a new email with attachments (a GraphQL multipart request).
import { useMutation, useQuery } from "@apollo/client/react";
import { useEffect, useState } from "react";

import { apiUrl } from "../apollo";
import { graphql } from "../gql";
import { href, navigate } from "../router";
import { ErrorNote } from "./ErrorNote";

const Folders = graphql(`
  query Folders {
    me {
      id
      folders {
        id
        label
        color
        unreadCount
      }
    }
  }
`);

const FolderQuery = graphql(`
  query Folder($label: String!) {
    me {
      id
      folder(label: $label) {
        id
        label
        emails(first: 20) {
          nodes {
            id
            subject
            sentAt
            read
            hasAttachments
            from {
              id
              login
            }
            email {
              id
            }
          }
        }
      }
    }
  }
`);

// `url` is signed for the viewer and works without the Authorization header (a plain link, an
// <img>) until `urlExpiresAt`; asking for the email again gives fresh links.
const EmailQuery = graphql(`
  query Email($id: ID!) {
    me {
      id
      email(id: $id) {
        id
        subject
        body
        sentAt
        read
        from {
          id
          login
        }
        to {
          id
          login
        }
        attachments {
          id
          filename
          contentType
          size
          url
          urlExpiresAt
        }
      }
    }
  }
`);

const MarkEmailRead = graphql(`
  mutation MarkEmailRead($id: ID!) {
    markEmailRead(id: $id) {
      id
      read
    }
  }
`);

// `attachments` are File objects: the upload link turns the request into a multipart one.
const SendEmail = graphql(`
  mutation SendEmail($input: EmailInput!) {
    sendEmail(input: $input) {
      id
    }
  }
`);

/** `route`: [] (inbox), ["folder", label], ["email", id] or ["new"]. */
export function Mailbox({ route }: { route: string[] }) {
  const { data, error } = useQuery(Folders);
  const [view, arg] = route;
  let main;
  if (view === "email" && arg) main = <Email id={arg} />;
  else if (view === "new") main = <Compose />;
  else main = <Folder label={view === "folder" && arg ? arg : "inbox"} />;
  return (
    <section className="split">
      <div>
        <a className="button" href={href("mail", "new")}>
          New email
        </a>
        <ErrorNote error={error} />
        <ul className="rows" aria-label="Folders">
          {data?.me?.folders.map((folder) => (
            <li key={folder.id}>
              <a href={href("mail", "folder", folder.label)}>
                <span className="dot" style={{ background: folder.color }} />
                {folder.label}
                {folder.unreadCount > 0 && <span className="badge">{folder.unreadCount}</span>}
              </a>
            </li>
          ))}
        </ul>
      </div>
      <div>{main}</div>
    </section>
  );
}

function Folder({ label }: { label: string }) {
  const { data, error } = useQuery(FolderQuery, { variables: { label }, fetchPolicy: "cache-and-network" });
  if (error) return <ErrorNote error={error} />;
  const folder = data?.me?.folder;
  if (!folder) return <p>{data ? `No folder ${label}.` : "Loading…"}</p>;
  return (
    <>
      <h1>{folder.label}</h1>
      <ul className="rows" aria-label="Emails">
        {folder.emails.nodes.map((summary) => (
          <li key={summary.id} className={summary.read ? undefined : "unread"}>
            <a href={href("mail", "email", summary.email.id)}>
              <strong>{summary.subject}</strong> {summary.hasAttachments && "📎"}
              <div className="muted">
                {summary.from.login} · {new Date(summary.sentAt).toLocaleString()}
              </div>
            </a>
          </li>
        ))}
        {folder.emails.nodes.length === 0 && <li className="muted">Empty.</li>}
      </ul>
    </>
  );
}

function Email({ id }: { id: string }) {
  // Always asked again: the download links in it expire.
  const { data, error } = useQuery(EmailQuery, { variables: { id }, fetchPolicy: "network-only" });
  // The payload is the Email; the folders' unread counts are other objects: fetched again (the
  // folder listing is fetched again when it shows).
  const [markRead] = useMutation(MarkEmailRead, { refetchQueries: [Folders] });
  const email = data?.me?.email;
  const unread = email ? !email.read : false;
  useEffect(() => {
    if (unread) void markRead({ variables: { id } });
  }, [unread, id, markRead]);
  if (error) return <ErrorNote error={error} />;
  if (!data) return <p>Loading…</p>;
  if (!email) return <p>No such email.</p>;
  return (
    <article>
      <h1>{email.subject}</h1>
      <p className="muted">
        From {email.from.login} to {email.to.map((user) => user.login).join(", ")} ·{" "}
        {new Date(email.sentAt).toLocaleString()}
      </p>
      <p className="body">{email.body}</p>
      <ul aria-label="Attachments">
        {email.attachments.map((attachment) => (
          <li key={attachment.id}>
            <a href={apiUrl(attachment.url)} download={attachment.filename}>
              {attachment.filename}
            </a>{" "}
            <span className="muted">
              {attachment.contentType}, {attachment.size} bytes, link valid until{" "}
              {new Date(attachment.urlExpiresAt).toLocaleTimeString()}
            </span>
          </li>
        ))}
      </ul>
    </article>
  );
}

function Compose() {
  const [send, { loading, error }] = useMutation(SendEmail, { refetchQueries: [Folders] });
  const [to, setTo] = useState("");
  const [subject, setSubject] = useState("");
  const [body, setBody] = useState("");
  const [files, setFiles] = useState<File[]>([]);
  return (
    <form
      className="stack"
      onSubmit={async (event) => {
        event.preventDefault();
        const recipients = to.split(/[\s,]+/).filter(Boolean);
        const input = { to: recipients, subject, body, attachments: files, clientMutationId: crypto.randomUUID() };
        const sent = await send({ variables: { input } }).catch(() => null); // shown from `error`
        if (sent) navigate("mail", "folder", "sent");
      }}
    >
      <h1>New email</h1>
      <label>
        To <input value={to} onChange={(event) => setTo(event.target.value)} placeholder="logins" />
      </label>
      <label>
        Subject <input value={subject} onChange={(event) => setSubject(event.target.value)} />
      </label>
      <label>
        Body <textarea value={body} onChange={(event) => setBody(event.target.value)} rows={6} />
      </label>
      <label>
        Attachments <input type="file" multiple onChange={(event) => setFiles([...(event.target.files ?? [])])} />
      </label>
      <button type="submit" disabled={loading}>
        Send
      </button>
      <ErrorNote error={error} />
    </form>
  );
}
