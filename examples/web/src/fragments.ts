// Fragments shared by several documents. What a subscription event or a mutation payload
// selects with the same fields (and arguments) as a screen's query lands in the same cache
// entries, so the screen updates with no cache code: that is what the gateway's payloads are for.
import { graphql } from "./gql";

export const UserPresence = graphql(`
  fragment UserPresence on User {
    id
    login
    firstname
    lastname
    presence {
      online
      lastSeenAt
    }
  }
`);

/** A row of the main view: the gateway sends it as it stands with every message, sent or received. */
export const PartnerRow = graphql(`
  fragment PartnerRow on TalkPartner {
    id
    unreadCount
    lastMessage
    lastMessageAt
    lastMessageId
    partner {
      ...UserPresence
    }
  }
`);

export const Message = graphql(`
  fragment Message on DirectMessage {
    id
    content
    sentAt
    sender {
      id
      login
    }
  }
`);

/** A conversation screen's state. Every `messageReceived` event and `sendMessage` payload
 * selects it too, so the open conversation shows each new message as it arrives. */
export const ConversationState = graphql(`
  fragment ConversationState on Conversation {
    id
    unreadCount
    partnerReadAt
    messages(first: 50) {
      nodes {
        ...Message
      }
    }
  }
`);

export const RoomMessage = graphql(`
  fragment RoomMessage on RoomMessage {
    id
    content
    postedAt
    systemMessage
    author {
      id
      login
    }
  }
`);
