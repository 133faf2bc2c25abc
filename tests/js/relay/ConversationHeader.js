// A conversation's header, refetchable by itself through node(id:) (`useRefetchableFragment`).
import { graphql } from "relay-runtime";

export const fragment = graphql`
  fragment ConversationHeader_conversation on Conversation
  @refetchable(queryName: "ConversationHeaderRefetchQuery") {
    id
    unreadCount
    unreadSince
    partnerReadAt
    with {
      id
      login
      firstname
      presence {
        online
        lastSeenAt
      }
    }
  }
`;
