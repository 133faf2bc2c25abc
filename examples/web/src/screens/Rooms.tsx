// Rooms: every room, the viewer's own marked; joining one; a room's messages, live.
import { useMutation, useQuery } from "@apollo/client/react";
import { useEffect, useState } from "react";

import { graphql } from "../gql";
import { href } from "../router";
import { ErrorNote } from "./ErrorNote";

const RoomsQuery = graphql(`
  query Rooms {
    rooms(first: 50) {
      nodes {
        id
        name
        banner
        participantCount
      }
    }
    me {
      id
      user {
        id
        rooms(first: 100) {
          nodes {
            id
            name
          }
        }
      }
    }
  }
`);

// Which rooms the viewer is in, and the room's messages now readable: fetched again.
const JoinRoom = graphql(`
  mutation JoinRoom($name: String!) {
    joinRoom(name: $name) {
      id
      participantCount
    }
  }
`);

const RoomQuery = graphql(`
  query Room($name: String!) {
    room(name: $name) {
      id
      name
      banner
      participantCount
      messages(first: 50) {
        nodes {
          ...RoomMessage
        }
      }
    }
  }
`);

// `room { participantCount }` keeps the count right as people join and leave (system messages).
const RoomMessages = graphql(`
  subscription RoomMessages($room: String!, $after: String) {
    roomMessages(room: $room, after: $after) {
      ...RoomMessage
      room {
        id
        participantCount
      }
    }
  }
`);

const PostRoomMessage = graphql(`
  mutation PostRoomMessage($room: String!, $content: String!, $clientMutationId: String) {
    postRoomMessage(room: $room, content: $content, clientMutationId: $clientMutationId) {
      id
    }
  }
`);

export function Rooms({ name }: { name?: string }) {
  const { data, error } = useQuery(RoomsQuery);
  if (error) return <ErrorNote error={error} />;
  if (!data) return <p>Loading…</p>;
  const mine = new Set(data.me?.user.rooms.nodes.map((room) => room.name));
  return (
    <section className="split">
      <ul className="rows" aria-label="Rooms">
        {data.rooms.nodes.map((room) => (
          <li key={room.id} className={room.name === name ? "selected" : undefined}>
            <a href={href("rooms", room.name)}>
              <strong>#{room.name}</strong> <span className="muted">{room.participantCount} in</span>
              {mine.has(room.name) && <span className="tag">joined</span>}
              <div className="muted">{room.banner}</div>
            </a>
          </li>
        ))}
      </ul>
      <div>{name ? <Room key={name} name={name} /> : <p className="muted">Pick a room.</p>}</div>
    </section>
  );
}

function Room({ name }: { name: string }) {
  // Anyone sees a room; its messages are for participants. To anyone else `messages` is null,
  // with a FORBIDDEN error on that field alone: `errorPolicy: "all"` keeps the rest.
  const { data, error, subscribeToMore } = useQuery(RoomQuery, { variables: { name }, errorPolicy: "all" });
  const [join, joining] = useMutation(JoinRoom, {
    refetchQueries: [RoomQuery, RoomsQuery],
    awaitRefetchQueries: true,
  });
  const [post] = useMutation(PostRoomMessage);
  const [draft, setDraft] = useState("");
  const messages = data?.room?.messages;
  const member = messages != null;
  useEffect(() => {
    if (!member) return;
    return subscribeToMore({
      document: RoomMessages,
      // From the newest message on screen: nothing between the query and the subscription is lost.
      variables: { room: name, after: messages.nodes[0]?.id ?? null },
      // A room has many readers, so its events do not carry the room's message list (each would
      // cost a read per reader): each message is added to the list here, once.
      updateQuery: (_, options) => {
        if (!options.complete) return;
        const previous = options.previousData;
        const message = options.subscriptionData.data.roomMessages;
        const list = previous.room?.messages;
        if (!list || list.nodes.some((m) => m.id === message.id)) return;
        const room = { ...previous.room!, messages: { ...list, nodes: [message, ...list.nodes] } };
        return { ...previous, room };
      },
    });
  }, [member, name, subscribeToMore]); // eslint-disable-line react-hooks/exhaustive-deps

  if (!data) return error ? <ErrorNote error={error} /> : <p>Loading…</p>;
  if (!data.room) return <p>No room #{name}.</p>;
  const room = data.room;
  return (
    <>
      <h1>
        #{room.name} <span className="muted">{room.participantCount} in</span>
      </h1>
      {room.banner && <p className="muted">{room.banner}</p>}
      {!messages && (
        <>
          <button disabled={joining.loading} onClick={() => void join({ variables: { name } })}>
            Join #{name}
          </button>
          <ErrorNote error={joining.error} />
        </>
      )}
      {messages && (
        <>
          <ol className="messages" aria-label="Room messages">
            {[...messages.nodes].reverse().map((message) => (
              <li key={message.id} className={message.systemMessage ? "system" : "theirs"}>
                {message.author && <strong>{message.author.login} </strong>}
                <span className="content">{message.content}</span>
                <time dateTime={message.postedAt}>{new Date(message.postedAt).toLocaleTimeString()}</time>
              </li>
            ))}
          </ol>
          <form
            onSubmit={(event) => {
              event.preventDefault();
              const content = draft.trim();
              if (!content) return;
              // The message comes back through the subscription, like everyone else's.
              void post({ variables: { room: name, content, clientMutationId: crypto.randomUUID() } });
              setDraft("");
            }}
          >
            <input aria-label="Room message" value={draft} onChange={(event) => setDraft(event.target.value)} />
            <button type="submit">Post</button>
          </form>
        </>
      )}
    </>
  );
}
