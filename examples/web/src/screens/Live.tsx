// What a signed-in page keeps live on every screen: the talk partners (the main view) with
// their unread counts and presence, new direct messages, and read receipts.
import { useQuery, useSubscription } from "@apollo/client/react";
import { useEffect } from "react";

import { graphql } from "../gql";

export const TalkPartners = graphql(`
  query TalkPartners {
    me {
      id
      user {
        ...UserPresence
      }
      talkPartners(first: 50) {
        nodes {
          ...PartnerRow
        }
      }
    }
  }
`);

// Every direct message to or from the viewer. Its payload carries the viewer's talk-partner row
// and the conversation as they stand now, so the row's unread count and last message, and an
// open conversation's messages, update in the cache by themselves.
const MessageReceived = graphql(`
  subscription MessageReceived($after: String) {
    messageReceived(after: $after) {
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

// The first event tells each partner's presence as it stands, the next ones each change; the
// cache's User entries take them, so every screen showing these users updates.
const PresenceChanged = graphql(`
  subscription PresenceChanged($logins: [String!]!) {
    presenceChanged(logins: $logins) {
      user {
        ...UserPresence
      }
    }
  }
`);

// A partner read the conversation: its `partnerReadAt` moves, and the "Seen" mark with it.
const ConversationRead = graphql(`
  subscription ConversationRead {
    conversationRead {
      conversation {
        id
        partnerReadAt
      }
    }
  }
`);

export function Live() {
  const { data, subscribeToMore } = useQuery(TalkPartners);
  const rows = data?.me?.talkPartners.nodes;

  const loaded = rows !== undefined;
  useEffect(() => {
    if (!rows) return;
    return subscribeToMore({
      document: MessageReceived,
      // The newest message this page holds (the list is most recent first): anything newer is
      // replayed before the subscription goes live, and after a reconnect the link in apollo.ts
      // moves `after` to the last event received.
      variables: { after: rows[0]?.lastMessageId ?? null },
      // The rows update themselves; only the list's order (and a first message from someone new)
      // is the list's business: the row the message belongs to moves to the top.
      updateQuery: (_, options) => {
        if (!options.complete) return; // the list is not (yet) wholly in the cache
        const previous = options.previousData;
        const row = options.subscriptionData.data.messageReceived.talkPartner;
        const list = previous.me?.talkPartners;
        if (!list || list.nodes[0]?.id === row.id) return;
        const nodes = [row, ...list.nodes.filter((node) => node.id !== row.id)];
        return { ...previous, me: { ...previous.me!, talkPartners: { ...list, nodes } } };
      },
    });
    // Subscribed once, when the list is first there (not again as it changes): from then on
    // `after` moves on inside the link.
  }, [loaded, subscribeToMore]); // eslint-disable-line react-hooks/exhaustive-deps

  // Variables are compared by value: a new list of the same logins keeps the subscription.
  const logins = [...new Set(rows?.map((row) => row.partner.login))].sort();
  useSubscription(PresenceChanged, { variables: { logins }, skip: logins.length === 0 });
  useSubscription(ConversationRead);
  return null;
}

/** Unread direct messages over every conversation (the main view's list). */
export function useUnreadTotal() {
  const { data } = useQuery(TalkPartners);
  return data?.me?.talkPartners.nodes.reduce((sum, row) => sum + row.unreadCount, 0) ?? 0;
}

/** "online", "last seen …", or nothing when the viewer may not see it. */
export function presenceText(presence: { online: boolean; lastSeenAt?: string | null } | null | undefined) {
  if (!presence) return "";
  if (presence.online) return "online";
  return presence.lastSeenAt ? `last seen ${new Date(presence.lastSeenAt).toLocaleString()}` : "offline";
}
