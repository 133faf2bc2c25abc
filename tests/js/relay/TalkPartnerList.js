// The main view: talk partners, most recent conversation first, paged both ways.
import { graphql } from "relay-runtime";

export const fragment = graphql`
  fragment TalkPartnerList_me on Me
  @refetchable(queryName: "TalkPartnerListPaginationQuery")
  @argumentDefinitions(
    first: { type: "Int", defaultValue: 20 }
    after: { type: "String" }
    last: { type: "Int" }
    before: { type: "String" }
  ) {
    id
    talkPartners(first: $first, after: $after, last: $last, before: $before)
      @connection(key: "TalkPartnerList_talkPartners") {
      edges {
        node {
          id
          lastMessage
          lastMessageAt
          unreadCount
          partner {
            id
            login
            presence {
              online
            }
          }
          conversation {
            id
          }
        }
      }
    }
  }
`;
